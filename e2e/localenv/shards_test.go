package localenv

import (
	"path/filepath"
	"testing"

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
