package controller

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decodeManifests reads a multi-document YAML stream into objects, skipping
// empty documents. Each object must have apiVersion, kind and a name.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rendered manifests, document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || (obj.GetName() == "" && obj.GetGenerateName() == "") {
			return nil, fmt.Errorf("rendered manifests, document %d: apiVersion, kind and metadata.name are required", i)
		}
		objs = append(objs, obj)
	}
}

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
