package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"plumb.dev/e2e/bench/benchkit"
)

// A process's shard is read from localenv's name for it, standby or not.
func TestProcessShardReadsLocalenvsNames(t *testing.T) {
	g := NewWithT(t)
	for name, want := range map[string][2]string{
		"sync-controller":                {"sync-controller", mainShard},
		"sync-controller-standby":        {"sync-controller", mainShard},
		"render-controller-shard2":       {"render-controller", "shard2"},
		"sync-controller-shard3-standby": {"sync-controller", "shard3"},
	} {
		c, s := processShard(name)
		g.Expect([2]string{c, s}).To(Equal(want), name)
	}
}

// The Kustomizations are labelled round-robin, and each shard's figures
// are its own Kustomizations' Ready times and its own processes' requests.
func TestPerShardSplitsReadyTimesAndRequestsAsLabelled(t *testing.T) {
	g := NewWithT(t)
	f := &fleetFigures{n: 4, shards: 2, readyAt: map[string]time.Duration{
		appName(0): 3 * time.Second, appName(1): 5 * time.Second, appName(2): 4 * time.Second, appName(3): 2 * time.Second,
	}, sync: benchkit.Delta{Client: map[string]float64{"sync-controller": 1, "sync-controller-shard1": 10, "render-controller-shard1": 5, "sync-controller-shard2": 7}}}
	g.Expect(shardOf(0, 2)).To(Equal("shard1"))
	g.Expect(shardOf(1, 2)).To(Equal("shard2"))
	g.Expect(shardLabels(0, 1)).To(BeNil(), "one shard: no label")

	got := f.perShard()
	g.Expect(got["shard1"]).To(Equal(&shardFigures{kustomizations: 2, lastReady: 4 * time.Second, requests: 15}))
	g.Expect(got["shard2"]).To(Equal(&shardFigures{kustomizations: 2, lastReady: 5 * time.Second, requests: 7}))
	g.Expect(got[mainShard]).To(Equal(&shardFigures{requests: 1}), "the main instance holds none of a sharded fleet")
}
