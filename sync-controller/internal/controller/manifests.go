package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// manifestCache keeps, per Kustomization, the objects of the artifact it
// last synced — as decoded, and as prepared and planned for one generation —
// so that a resync of the same digest downloads, decodes, stamps and plans
// nothing. Prepared objects and plans are shared read-only: the engine and
// the hooks copy an object before they change it.
type manifestCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*cachedManifests
}

type cachedManifests struct {
	digest string
	// decoded are the objects as the artifact holds them.
	decoded []*unstructured.Unstructured
	// prepared and hashes are for generation; plan for the sync
	// operation syncID (its hooks' names are the operation's).
	generation int64
	prepared   []*unstructured.Unstructured
	hashes     map[object.ID]string
	syncID     string
	plan       *plan.Plan
}

// decoded returns copies of the decoded objects of the digest, to prepare.
func (c *manifestCache) decoded(key types.NamespacedName, digest string) ([]*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest {
		return nil, false
	}
	return deepCopyAll(cached.decoded), true
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

// putDecoded keeps the decoded objects of a new digest.
func (c *manifestCache) putDecoded(key types.NamespacedName, digest string, objs []*unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]*cachedManifests{}
	}
	c.m[key] = &cachedManifests{digest: digest, decoded: deepCopyAll(objs)}
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

func (c *manifestCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

func deepCopyAll(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
