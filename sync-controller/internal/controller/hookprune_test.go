package controller

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/object"
)

// `helm template` output committed to Git was applied as ordinary objects:
// a CRD, a custom resource of it and a ConfigMap are in the inventory. The
// same objects read again as Helm hooks — helm.sh/hook: crd-install on the
// CRD (no phase of a sync), helm.sh/hook: test on the ConfigMap (never
// applied) — leave the inventory but stay in the render, so nothing is
// pruned: the CRD, and with it every custom resource, survives.
func TestAnObjectThatBecameAHookIsNotPruned(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	suffix := strings.TrimPrefix(ks.Namespace, "sync-")
	group := "hooked" + suffix + ".example.com"
	crdName := "gizmos." + group
	crd := func(annotations string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s
  annotations: {%[3]s}
spec:
  group: %[1]s
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group, crdName, annotations)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, crdObject(crdName)) })
	gizmo := fmt.Sprintf("apiVersion: %s/v1\nkind: Gizmo\nmetadata:\n  name: one\n  namespace: %s\nspec:\n  size: 3\n", group, ks.Namespace)
	settings := func(annotations string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\n  annotations: {%s}\ndata:\n  key: value\n", ks.Namespace, annotations)
	}

	render(t, ks, "main@sha1:h1", crd("")+"---\n"+gizmo+"---\n"+settings(""))
	got := waitReady(t, ks, "main@sha1:h1")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(3))

	render(t, ks, "main@sha1:h2", crd(`helm.sh/hook: crd-install`)+"---\n"+gizmo+"---\n"+settings(`helm.sh/hook: test`))
	got = waitReady(t, ks, "main@sha1:h2")
	// Hooks are not in the inventory; the custom resource still is.
	ids := make([]string, 0, len(got.Status.Inventory.Entries))
	for _, e := range got.Status.Inventory.Entries {
		ids = append(ids, inventory.IDOf(e).String())
	}
	g.Expect(ids).To(ConsistOf(object.ID{Group: group, Kind: "Gizmo", Namespace: ks.Namespace, Name: "one"}.String()))

	// The prune step ran before Ready: whatever it deleted is being
	// deleted now. A Get that fails fails the test.
	live := crdObject(crdName)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: crdName}, live)).To(Succeed())
	g.Expect(live.GetDeletionTimestamp()).To(BeNil(), "the CRD is being deleted")
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion(group + "/v1")
	cr.SetKind("Gizmo")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "one"}, cr)).To(Succeed())
	g.Expect(cr.GetDeletionTimestamp()).To(BeNil(), "the custom resource is being deleted")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "settings"}, cm)).To(Succeed())
	g.Expect(cm.DeletionTimestamp).To(BeNil(), "the ConfigMap is being deleted")
}
