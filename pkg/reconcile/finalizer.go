package reconcile

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// SetFinalizer adds (present) or removes (!present) a controller's finalizer
// by server-side apply under the field manager. metadata.finalizers is a
// set, so each controller's apply touches only its own entry: two
// controllers finalizing one object (render- and sync-controller on a
// Kustomization) can never drop each other's finalizer, as a merge patch of
// the whole list could. Removing also takes out an entry of the same name
// that another field manager owns (an admission policy's, say), since a
// finalizer left behind would hold the object forever.
func SetFinalizer(ctx context.Context, c client.Client, obj client.Object, fieldManager, finalizer string, present bool) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	u.SetUID(obj.GetUID()) // never finalize a recreated object of the same name
	finalizers := []any{}
	if present {
		finalizers = []any{finalizer}
	}
	if err := unstructured.SetNestedSlice(u.Object, finalizers, "metadata", "finalizers"); err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager+"-finalizer"), client.ForceOwnership); err != nil {
		return fmt.Errorf("setting the finalizer %s on %s/%s: %w", finalizer, obj.GetNamespace(), obj.GetName(), err)
	}
	if !present {
		// The apply gave up only this controller's claim. A finalizer put
		// there otherwise — by another manager, or by the install's
		// admission policy, whose entry no manager owns (the API server
		// records ownership before mutating admission runs) — is still in
		// the list; take it out by position, the test ops making sure the
		// position still holds it on the same object.
		if i := slices.Index(u.GetFinalizers(), finalizer); i >= 0 {
			patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},`+
				`{"op":"test","path":"/metadata/finalizers/%d","value":%q},`+
				`{"op":"remove","path":"/metadata/finalizers/%d"}]`, u.GetUID(), i, finalizer, i)
			if err := c.Patch(ctx, u, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
				return fmt.Errorf("removing the finalizer %s from %s/%s: %w", finalizer, obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	// The answer is the whole object as stored now; take it, so the caller
	// goes on with fresher state than its cached copy (status included).
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("reading back %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
