package diff

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// A Deployment from Git, and the cluster's copy of it with a sidecar an
// admission webhook injected first in the list, three replicas set by an
// autoscaler, and the managed fields the API server records for both.
const (
	webFromGit = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: a}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - {name: app, image: "app:2"}
`
	webInCluster = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: a
  managedFields:
  - manager: plumb-sync
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}
  - manager: sidecar-injector
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}
  - manager: autoscaler
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: proxy, image: "proxy:1"}
      - {name: app, image: "app:1"}
`
)

func ignorer(t *testing.T, rules ...kustomizev1.IgnoreRule) *Ignorer {
	t.Helper()
	ig, err := NewIgnorer(rules)
	if err != nil {
		t.Fatal(err)
	}
	return ig
}

func TestJQPathExpressionsAreResolvedOnEachSide(t *testing.T) {
	g := NewWithT(t)
	live, desired := obj(t, webInCluster), obj(t, webFromGit)
	g.Expect(changed(Diff(live, desired, nil))).To(ContainElements("spec.replicas", "spec.template.spec.containers[0].name"),
		"without rules the sidecar and the replicas differ")

	ig := ignorer(t, kustomizev1.IgnoreRule{
		JQPathExpressions: []string{
			`.spec.template.spec.containers[] | select(.name == "proxy")`,
			`.spec.template.spec.containers[] | select(.name == "app") | .image`,
			`select(.spec.replicas >= 1) | .spec.replicas`, // numbers compare as numbers
		},
		Target: &kustomizev1.Selector{Kind: "Deployment"},
	})
	res := Diff(live, desired, ig)
	g.Expect(res.Action).To(Equal(Unchanged), "changes left: %v", changed(res))

	// A rule for another kind leaves the Deployment's differences.
	other := ignorer(t, kustomizev1.IgnoreRule{JQPathExpressions: []string{".spec.replicas"}, Target: &kustomizev1.Selector{Kind: "StatefulSet"}})
	g.Expect(Diff(live, desired, other).Action).To(Equal(Configured))
}

func TestKeepLiveFindsAJQFieldInTheListElementOfTheSameName(t *testing.T) {
	g := NewWithT(t)
	live, desired := obj(t, webInCluster), obj(t, webFromGit)
	ig := ignorer(t, kustomizev1.IgnoreRule{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}})
	ig.KeepLive(desired, live)
	containers, _, _ := unstructured.NestedSlice(desired.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).To(HaveLen(1), "the sidecar is not taken into what Git declares")
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "app:1"), "the app container's live image, not the sidecar's at the same index")
}

func TestManagedFieldsManagersIgnoreWhatTheyOwn(t *testing.T) {
	g := NewWithT(t)
	live, desired := obj(t, webInCluster), obj(t, webFromGit)
	// The app image differs too, and it is plumb-sync's: it stays a change.
	ig := ignorer(t, kustomizev1.IgnoreRule{ManagedFieldsManagers: []string{"autoscaler", "sidecar-injector"}})
	res := Diff(live, desired, ig)
	g.Expect(changed(res)).To(ConsistOf("spec.template.spec.containers[0].image"), "only the field no ignored manager owns")

	ig.KeepLive(desired, live)
	replicas, _, _ := unstructured.NestedInt64(desired.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(3)), "the autoscaler's replicas are kept")
	containers, _, _ := unstructured.NestedSlice(desired.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).To(HaveLen(1), "the injected container is the injector's, and Git does not declare it")
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "app:2"), "Git's image is applied")

	// A manager that owns nothing here ignores nothing.
	g.Expect(Diff(live, obj(t, webFromGit), ignorer(t, kustomizev1.IgnoreRule{ManagedFieldsManagers: []string{"kubectl"}})).Action).To(Equal(Configured))
}

func TestAJQExpressionThatRunsAwayIgnoresNothing(t *testing.T) {
	g := NewWithT(t)
	live, desired := obj(t, webInCluster), obj(t, webFromGit)
	for _, expr := range []string{
		`last(range(1e15)) as $x | .spec.replicas`, // stopped at its deadline
		`limit(5000; repeat(.spec.replicas))`,      // more fields than the bound
		`.spec.template.spec.containers.app`,       // a type error on this object
	} {
		ig := ignorer(t, kustomizev1.IgnoreRule{JQPathExpressions: []string{expr}})
		g.Expect(ig.fieldsIn(desired, live, live)).To(BeEmpty(), expr)
		g.Expect(changed(Diff(live, desired, ig))).To(ContainElement("spec.replicas"), expr)
	}
}

// changed lists the paths of a result's changes.
func changed(res Result) []string {
	var out []string
	for _, c := range res.Changes {
		out = append(out, c.Path)
	}
	return out
}
