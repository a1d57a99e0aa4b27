package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// manifestCache keeps, per Kustomization, the decoded objects of the
// artifact it last synced, so a resync of the same digest downloads nothing.
type manifestCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]cachedManifests
}

type cachedManifests struct {
	digest string
	objs   []*unstructured.Unstructured
}

// get returns deep copies of the cached objects when the digest matches.
func (c *manifestCache) get(key types.NamespacedName, digest string) ([]*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok || cached.digest != digest {
		return nil, false
	}
	return deepCopyAll(cached.objs), true
}

func (c *manifestCache) put(key types.NamespacedName, digest string, objs []*unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]cachedManifests{}
	}
	c.m[key] = cachedManifests{digest: digest, objs: deepCopyAll(objs)}
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
