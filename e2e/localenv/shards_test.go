package localenv

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// With Options.Shards, each shard's instance of a controller runs the same
// binary with its shard's selector, its own ports, storage and log, and the
// main instance takes the objects of no shard.
func TestShardedControllersHaveTheirSelectorsPortsAndStorage(t *testing.T) {
	g := NewWithT(t)
	e := &Env{StateDir: t.TempDir(), NATSURL: "nats://127.0.0.1:4222", opts: Options{BinDir: "/opt/plumb/bin", Shards: 2, LogLevel: "info"}}
	t.Cleanup(func() {
		for _, f := range e.sockets {
			_ = f.Close()
		}
	})
	main, err := e.newController(SourceController, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	shard, err := e.newController(SourceController, "shard2", nil)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(shard.Name).To(Equal("source-controller-shard2"))
	g.Expect(shard.Path).To(Equal(main.Path), "one binary for every instance")
	g.Expect(main.Args).To(ContainElement("--watch-label-selector=!sharding.plumb.dev/key"))
	g.Expect(shard.Args).To(ContainElement("--watch-label-selector=sharding.plumb.dev/key in (shard2)"))
	g.Expect(shard.StorageAddr).NotTo(Equal(main.StorageAddr))
	g.Expect(shard.Args).To(ContainElement("--storage-adv-addr="+shard.StorageAddr), "its artifact URLs name its own server")
	g.Expect(shard.Args).To(ContainElement("--storage-path=" + filepath.Join(e.StateDir, "source-controller-shard2", "data")))
	g.Expect(shard.LogPath).NotTo(Equal(main.LogPath))

	e.opts.Shards = 0
	alone, err := e.newController(SourceController, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range alone.Args {
		g.Expect(a).NotTo(HavePrefix("--watch-label-selector"), "no shards, no selector")
	}
}

// With Options.Standbys, a controller's standby runs with leader election
// on and the short Lease, as its leader does, on ports of its own for
// probes and metrics, and shares the leader's storage socket, address and
// folder; the other controllers run alone without leader election.
func TestAStandbySharesItsLeadersStorageAndElectsOnTheSameLease(t *testing.T) {
	g := NewWithT(t)
	e := &Env{StateDir: t.TempDir(), NATSURL: "nats://127.0.0.1:4222", opts: Options{BinDir: "/opt/plumb/bin", LogLevel: "info",
		Standbys:       []string{RenderController},
		LeaderElection: LeaderElection{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}}}
	t.Cleanup(func() {
		for _, f := range e.sockets {
			_ = f.Close()
		}
	})
	leader, err := e.newController(RenderController, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	standby, err := e.newController(RenderController, "", leader)
	g.Expect(err).NotTo(HaveOccurred())
	alone, err := e.newController(SyncController, "", nil)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(standby.Name).To(Equal("render-controller-standby"))
	for _, c := range []*Controller{leader, standby} {
		g.Expect(c.Elects).To(BeTrue())
		g.Expect(c.Lease).To(Equal("render-controller.plumb.dev"), "pkg/app's name for an instance without a selector")
		g.Expect(c.Env).To(ContainElement("RUNTIME_NAMESPACE=" + LeaseNamespace))
		g.Expect(c.Args).To(ContainElements("--enable-leader-election=true", "--leader-election-lease-duration=4s",
			"--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s"))
		g.Expect(c.Args).NotTo(ContainElement("--enable-leader-election=false"))
	}
	g.Expect(standby.MetricsAddr).NotTo(Equal(leader.MetricsAddr))
	g.Expect(standby.HealthAddr).NotTo(Equal(leader.HealthAddr))
	g.Expect(standby.StorageAddr).To(Equal(leader.StorageAddr), "one address, served by whichever leads")
	g.Expect(standby.ExtraFiles).To(ContainElement(BeIdenticalTo(leader.served)))
	g.Expect(standby.Args).To(ContainElement("--storage-path=" + filepath.Join(e.StateDir, "render-controller", "data")))
	g.Expect(standby.Args).To(ContainElement("--storage-adv-addr=" + leader.StorageAddr))

	g.Expect(alone.Elects).To(BeFalse())
	g.Expect(alone.Args).To(ContainElement("--enable-leader-election=false"))
}

// Options that cannot work are refused before anything starts.
func TestStandbyOptionsAreChecked(t *testing.T) {
	g := NewWithT(t)
	o := Options{Root: t.TempDir(), Standbys: []string{"kube-controller-manager"}}
	g.Expect(o.defaults()).To(MatchError(ContainSubstring(`a standby of "kube-controller-manager": not a controller`)))
	o = Options{Root: t.TempDir(), Standbys: []string{SyncController}, LeaderElection: LeaderElection{LeaseDuration: 2 * time.Second, RenewDeadline: 3 * time.Second}}
	g.Expect(o.defaults()).To(MatchError(ContainSubstring("want retry period < renew deadline < lease duration, got 1s, 3s, 2s")))
}
