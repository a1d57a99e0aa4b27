package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// manifestCache keeps, per Kustomization, the artifact it last synced — its
// verified bytes, and its objects as prepared and planned for one
// generation — so that a resync of the same digest downloads, decodes,
// stamps and plans nothing, and a new generation of the same digest only
// decodes again. The bytes rather than the decoded objects: decoded, a
// small object takes several times its YAML in maps, which the prepared
// objects already hold (what the cache holds is about half of
// sync-controller's live heap after a fleet of 1,000: docs/bench/fleet.md,
// run 33). The plan holds the prepared objects themselves, not copies
// (pkg/plan.Build): one decoded copy of each object per artifact.
//
// Once a sync has settled (settle), a small artifact keeps only its bytes:
// the prepared objects and the plan of a few objects are ten times their
// YAML, and re-deriving them from the bytes takes well under a millisecond
// of CPU and no request, where keeping them cost most of the memory a
// Kustomization adds to a fleet (docs/bench/fleet.md, "Memory at 5,000").
// A large artifact keeps them: it is a few Kustomizations, not a fleet,
// and each drift correction of one would decode and hash every object again.
// Prepared objects and plans are shared read-only, with each other and with
// every run that takes them: the engine and the hooks copy an object before
// they change it (TestACachedPlanIsNotChangedByTheRunsThatApplyIt).
type manifestCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*cachedManifests
}

type cachedManifests struct {
	digest string
	// data is the artifact as downloaded, its digest verified.
	data []byte
	// prepared and hashes are for generation; plan for the sync
	// operation syncID (its hooks' names are the operation's).
	generation int64
	prepared   []*unstructured.Unstructured
	hashes     map[object.ID]string
	syncID     string
	plan       *plan.Plan
}

// artifact returns the kept bytes of the digest, to decode and prepare;
// they are shared read-only.
func (c *manifestCache) artifact(key types.NamespacedName, digest string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest {
		return nil, false
	}
	return cached.data, true
}

// prepared returns the prepared objects and hashes of the digest at the
// generation, with the plan of the sync operation that prepared them, if
// they were kept.
func (c *manifestCache) prepared(key types.NamespacedName, digest string, generation int64) (*cachedManifests, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest || cached.generation != generation || cached.plan == nil {
		return nil, false
	}
	return cached, true
}

// putArtifact keeps the verified bytes of a new digest, forgetting what
// was prepared from the one before.
func (c *manifestCache) putArtifact(key types.NamespacedName, digest string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]*cachedManifests{}
	}
	c.m[key] = &cachedManifests{digest: digest, data: data}
}

// putPrepared keeps the prepared objects of the digest and the plan of
// one sync operation.
func (c *manifestCache) putPrepared(key types.NamespacedName, digest string, generation int64, syncID string, objs []*unstructured.Unstructured, hashes map[object.ID]string, p *plan.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest {
		return
	}
	cached.generation, cached.prepared, cached.hashes, cached.syncID, cached.plan = generation, objs, hashes, syncID, p
}

// keepPreparedOver is the size of artifact above which the prepared
// objects and the plan outlive their sync operation: about 100 small
// objects, whose decoding and hashing would take milliseconds.
const keepPreparedOver = 64 << 10

// settle forgets what was prepared and planned from a small artifact of the
// digest: its sync operation is over, and a later run (a resync, a drift
// correction, a retry with a new operation) prepares again from the kept
// bytes, with the same hashes and, for a re-check of the same operation,
// the same plan.
func (c *manifestCache) settle(key types.NamespacedName, digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest || len(cached.data) > keepPreparedOver {
		return
	}
	cached.generation, cached.prepared, cached.hashes, cached.syncID, cached.plan = 0, nil, nil, "", nil
}

func (c *manifestCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
