package main

import (
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/options"
)

// Every shard reads every event through a durable consumer of its own: the
// default name is made the shard's, a name given on the command line is
// kept (deploy/ names each, as the NATS permissions list them).
func TestEachShardHasADurableConsumerOfItsOwn(t *testing.T) {
	g := NewWithT(t)
	unsharded := options.Manager{}
	main := options.Manager{WatchLabelSelector: "!sharding.plumb.dev/key"}
	shard1 := options.Manager{WatchLabelSelector: "sharding.plumb.dev/key in (shard1)"}
	shard2 := options.Manager{WatchLabelSelector: "sharding.plumb.dev/key in (shard2)"}

	g.Expect(shardConsumer(unsharded, "notification-controller", false)).To(Equal("notification-controller"))
	names := map[string]bool{}
	for _, m := range []options.Manager{unsharded, main, shard1, shard2} {
		names[shardConsumer(m, "notification-controller", false)] = true
	}
	g.Expect(names).To(HaveLen(4), "two instances share a durable consumer")
	for name := range names {
		g.Expect(name).To(MatchRegexp(`^notification-controller(-[0-9a-f]{8})?$`), "a JetStream durable name: no dots or wildcards")
	}
	g.Expect(shardConsumer(shard1, "notification-controller-shard1", true)).To(Equal("notification-controller-shard1"))
}
