package options

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"plumb.dev/pkg/artifact"
)

func parseStorage(t *testing.T, args ...string) (Storage, error) {
	t.Helper()
	var o Storage
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o, o.Validate()
}

func TestStorageServerFlagsDefaultToTheArtifactServerDefaults(t *testing.T) {
	g := NewWithT(t)
	o, err := parseStorage(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.ReadHeaderTimeout).To(Equal(artifact.DefaultReadHeaderTimeout))
	g.Expect(o.ReadTimeout).To(Equal(artifact.DefaultReadTimeout))
	g.Expect(o.WriteTimeout).To(Equal(artifact.DefaultWriteTimeout))
	g.Expect(o.IdleTimeout).To(Equal(artifact.DefaultIdleTimeout))
	g.Expect(o.MaxConnections).To(Equal(artifact.DefaultMaxConnections))
	g.Expect(o.ServerOptions()).To(HaveLen(5))

	o, err = parseStorage(t, "--storage-read-header-timeout=1s", "--storage-read-timeout=2s",
		"--storage-write-timeout=3m", "--storage-idle-timeout=4s", "--storage-max-connections=5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.ReadHeaderTimeout).To(Equal(time.Second))
	g.Expect(o.ReadTimeout).To(Equal(2 * time.Second))
	g.Expect(o.WriteTimeout).To(Equal(3 * time.Minute))
	g.Expect(o.IdleTimeout).To(Equal(4 * time.Second))
	g.Expect(o.MaxConnections).To(Equal(5))
}

func TestStorageRefusesAServerWithoutBounds(t *testing.T) {
	for flag, msg := range map[string]string{
		"--storage-read-header-timeout=0": "--storage-read-header-timeout must be positive",
		"--storage-read-timeout=0":        "--storage-read-timeout must be positive",
		"--storage-write-timeout=-1s":     "--storage-write-timeout must be positive",
		"--storage-idle-timeout=0":        "--storage-idle-timeout must be positive",
		"--storage-max-connections=0":     "--storage-max-connections must be at least 1",
	} {
		t.Run(flag, func(t *testing.T) {
			_, err := parseStorage(t, flag)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(msg)))
		})
	}
}

func TestLeaderElectionIsOnByDefaultAndCanBeTurnedOff(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) Manager {
		var o Manager
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return o
	}
	o := parse()
	g.Expect(o.LeaderElection.Enable).To(BeTrue())
	g.Expect(o.LeaderElection.ReleaseOnCancel).To(BeTrue())
	g.Expect(o.LeaderElection.LeaseDuration).To(Equal(35 * time.Second))
	g.Expect(parse("--enable-leader-election=false").LeaderElection.Enable).To(BeFalse())
	g.Expect(parse("--enable-leader-election").LeaderElection.Enable).To(BeTrue())
}

func TestAWatchLabelSelectorNamesTheShardsOwnLeaseAndConsumer(t *testing.T) {
	for name, tc := range map[string]struct {
		selector string
		matches  map[string]string
		refused  map[string]string
	}{
		"a shard": {
			selector: "sharding.plumb.dev/key in (shard1)",
			matches:  map[string]string{"sharding.plumb.dev/key": "shard1"},
			refused:  map[string]string{"sharding.plumb.dev/key": "shard2"},
		},
		"the main instance": {
			selector: "!sharding.plumb.dev/key",
			matches:  map[string]string{"app": "podinfo"},
			refused:  map[string]string{"sharding.plumb.dev/key": "shard1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var o Manager
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.BindFlags(fs)
			g.Expect(fs.Parse([]string{"--watch-label-selector=" + tc.selector})).To(Succeed())
			g.Expect(o.Validate()).To(Succeed())
			sel, err := o.WatchSelector()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sel.Matches(labels.Set(tc.matches))).To(BeTrue())
			g.Expect(sel.Matches(labels.Set(tc.refused))).To(BeFalse())
			g.Expect(o.ShardName("sync-controller.plumb.dev")).To(MatchRegexp(`^sync-controller\.plumb\.dev-[0-9a-f]{8}$`))
		})
	}
	g := NewWithT(t)
	var o Manager
	sel, err := o.WatchSelector()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel.Empty()).To(BeTrue(), "no selector: every object")
	g.Expect(o.ShardName("sync-controller.plumb.dev")).To(Equal("sync-controller.plumb.dev"), "an unsharded instance keeps the Lease it always had")
	a, b := Manager{WatchLabelSelector: "sharding.plumb.dev/key in (shard1)"}, Manager{WatchLabelSelector: "sharding.plumb.dev/key in (shard2)"}
	g.Expect(a.ShardName("x")).NotTo(Equal(b.ShardName("x")))

	o.Concurrent, o.WatchLabelSelector = 1, "sharding.plumb.dev/key in (shard1"
	g.Expect(o.Validate()).To(MatchError(ContainSubstring(`--watch-label-selector "sharding.plumb.dev/key in (shard1"`)))
}

// A program that only reads the stream is not offered the flags it would
// ignore: the stream's bounds and replicas and the publish queue.
func TestReadersTakeOnlyTheFlagsTheyRead(t *testing.T) {
	g := NewWithT(t)
	fs := pflag.NewFlagSet("ui", pflag.ContinueOnError)
	var o NATS
	o.BindReaderFlags(fs)
	g.Expect(fs.Parse([]string{"--nats-url=nats://a:4222", "--nats-stream=EV"})).To(Succeed())
	g.Expect(o.URL).To(Equal("nats://a:4222"))
	g.Expect(o.Stream).To(Equal("EV"))
	for _, f := range []string{"nats-stream-max-age", "nats-stream-max-bytes", "nats-stream-replicas", "events-queue-size"} {
		g.Expect(fs.Lookup(f)).To(BeNil(), f)
	}
	g.Expect(fs.Lookup("nats-creds-file")).NotTo(BeNil())
}

// A controller presets its own --concurrent default; the flag still wins.
func TestAPresetConcurrentIsTheFlagsDefault(t *testing.T) {
	g := NewWithT(t)
	parse := func(preset int, args ...string) int {
		o := Manager{Concurrent: preset}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return o.Concurrent
	}
	g.Expect(parse(0)).To(Equal(DefaultConcurrent))
	g.Expect(parse(16)).To(Equal(16))
	g.Expect(parse(16, "--concurrent=2")).To(Equal(2))
}
