package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ApplyStatus server-side-applies the given status fields of obj under the
// field manager, forcing ownership of them. Only the fields in status are
// sent, so fields (and condition types, the conditions list being a map keyed
// by type) that another manager owns are left alone. status is the object's
// status in JSON form, e.g. from runtime.DefaultUnstructuredConverter.
func ApplyStatus(ctx context.Context, c client.Client, obj client.Object, fieldManager string, status map[string]any) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	if err := c.Status().Patch(ctx, u, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status of %s %s/%s as %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), fieldManager, err)
	}
	return nil
}

// ToStatusMap converts a typed status struct to its JSON form for ApplyStatus.
func ToStatusMap(status any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(status)
}
