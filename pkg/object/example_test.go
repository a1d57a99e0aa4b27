package object_test

import (
	"fmt"
	"sort"

	"plumb.dev/pkg/object"
)

// DecodeManifests reads a rendered artifact; IDOf names each object, the
// version left out; Less sorts them into the kind order of a sync wave.
func ExampleLess() {
	objs, err := object.DecodeManifests([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := make([]object.ID, len(objs))
	for i, o := range objs {
		ids[i] = object.IDOf(o)
	}
	sort.Slice(ids, func(i, j int) bool { return object.Less(ids[i], ids[j]) })
	fmt.Println(ids)
	// Output:
	// [Namespace/shop ConfigMap/shop/web Deployment/shop/web Widget/shop/w]
}
