package diff_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
)

func decode(doc string) *unstructured.Unstructured {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		panic(err)
	}
	return u
}

// Diff compares the live object with the server's dry-run of the desired
// one. Server-owned metadata and status never count; the ignore rule
// leaves the replicas an autoscaler owns alone; what is left is reported
// field by field, live value before, Git's after.
func ExampleDiff() {
	live := decode(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, resourceVersion: "42", uid: 1b2c}
spec:
  replicas: 7
  template:
    spec:
      containers: [{name: web, image: "web:1.0"}]
status: {readyReplicas: 7}
`)
	desired := decode(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: web, image: "web:1.1"}]
`)
	ig, err := diff.NewIgnorer([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res := diff.Diff(live, desired, ig)
	fmt.Println(res.Action, res.Object)
	for _, c := range res.Changes {
		fmt.Printf("  %s: %s → %s\n", c.Path, c.Before, c.After)
	}
	fmt.Println(res.Paths())
	// Output:
	// Configured Deployment/shop/web
	//   spec.template.spec.containers[0].image: "web:1.0" → "web:1.1"
	// [Deployment/shop/web:spec.template.spec.containers[0].image]
}

// A Secret's values never leave the package: a changed key shows the
// fixed marker on both sides.
func ExampleDiff_secret() {
	live := decode(`{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: shop}, data: {password: b2xk}}`)
	desired := decode(`{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: shop}, data: {password: bmV3}}`)
	for _, c := range diff.Diff(live, desired, nil).Changes {
		fmt.Printf("%s: %s → %s\n", c.Path, c.Before, c.After)
	}
	// Output:
	// data.password: "<redacted>" → "<redacted>"
}
