package plan_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/plan"
)

func obj(apiVersion, kind, namespace, name string, annotations map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	o.SetAnnotations(annotations)
	return o
}

// Build orders a rendered set into phases and waves. The Namespace is
// declared in wave 5 but hoisted into wave 0, ahead of what lives in it;
// the migration Job is a PreSync hook, named for this sync from its
// generateName; within a wave the kind order puts the ConfigMap before the
// Deployment. sync-controller walks Steps in order.
func ExampleBuild() {
	migrate := obj("batch/v1", "Job", "shop", "", map[string]string{"plumb.dev/hook": "PreSync"})
	migrate.SetGenerateName("migrate-")
	p, err := plan.Build([]*unstructured.Unstructured{
		obj("apps/v1", "Deployment", "shop", "web", nil),
		obj("v1", "ConfigMap", "shop", "web", nil),
		obj("v1", "Namespace", "", "shop", map[string]string{"plumb.dev/sync-wave": "5"}),
		obj("v1", "Service", "shop", "web", map[string]string{"plumb.dev/sync-wave": "1"}),
		migrate,
	}, plan.Options{SyncID: "rev1-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range p.Steps() {
		fmt.Printf("%s wave %d:", st.Phase, st.Wave.Number)
		for _, o := range st.Wave.Objects {
			fmt.Printf(" %s", o.ID())
			if o.Hook != nil {
				fmt.Printf(" (hook, from %s)", o.Hook.GenerateName)
			}
		}
		fmt.Println()
	}
	fmt.Println("inventory:", len(p.Inventory), "objects")
	// Output:
	// PreSync wave 0: Namespace/shop Job/shop/migrate-4747467f (hook, from migrate-)
	// Sync wave 0: ConfigMap/shop/web Deployment/shop/web
	// Sync wave 1: Service/shop/web
	// inventory: 4 objects
}

// PruneOrder reverses the apply order: what lives in a namespace goes
// before the Namespace.
func ExamplePruneOrder() {
	for _, o := range plan.Flatten(plan.PruneOrder([]*unstructured.Unstructured{
		obj("v1", "Namespace", "", "old", nil),
		obj("v1", "ConfigMap", "old", "settings", nil),
		obj("apps/v1", "Deployment", "old", "web", nil),
	})) {
		fmt.Println(o.GetKind(), o.GetName())
	}
	// Output:
	// Deployment web
	// ConfigMap settings
	// Namespace old
}
