package reconcile

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/message"
)

// ApplyStatus server-side-applies the given status fields of obj under the
// field manager, forcing ownership of them. Only the fields in status are
// sent, so fields (and condition types, the conditions list being a map keyed
// by type) that another manager owns are left alone. status is the object's
// status in JSON form, e.g. from runtime.DefaultUnstructuredConverter.
//
// Every string field named message, at any depth (conditions[*].message,
// sync.message), is first cut to message.MaxBytes, in status itself: the
// API server refuses a condition message over 32,768 characters, and a
// refused write would leave the previous conditions in place.
//
// On success obj's resourceVersion is the one the API server stored the
// write at (its status is not read back: the caller's copy is its own), so
// that a controller reading obj from its cache can tell when the cache has
// its write (sync-controller's Syncer). The response is asked for as
// metadata only (PartialObjectMetadata, as the metadata client asks): the
// resourceVersion is all that is read of it, and the whole object — spec,
// status, inventory — would cost the API server its encoding and the
// controller its decoding on every status write (docs/bench/fleet.md,
// "Fleet runs C1–C4").
func ApplyStatus(ctx context.Context, c client.Client, obj client.Object, fieldManager string, status map[string]any) error {
	return applyStatus(ctx, c, obj, fieldManager, status, false)
}

// ApplyStatusAt is ApplyStatus with obj's resourceVersion as a
// precondition: the API server refuses the apply with a Conflict when the
// object was written since that version, so a controller that sends a
// field another controller may have written since it read the object
// (sync-controller carrying render-controller's render status) never
// forces an older value over a newer one.
func ApplyStatusAt(ctx context.Context, c client.Client, obj client.Object, fieldManager string, status map[string]any) error {
	return applyStatus(ctx, c, obj, fieldManager, status, true)
}

func applyStatus(ctx context.Context, c client.Client, obj client.Object, fieldManager string, status map[string]any, at bool) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	boundMessages(status)
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	if at {
		u.SetResourceVersion(obj.GetResourceVersion())
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding status of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	stored := &metav1.PartialObjectMetadata{}
	stored.SetGroupVersionKind(gvk)
	stored.SetName(obj.GetName())
	stored.SetNamespace(obj.GetNamespace())
	if err := c.Status().Patch(ctx, stored, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status of %s %s/%s as %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), fieldManager, err)
	}
	obj.SetResourceVersion(stored.GetResourceVersion())
	return nil
}

// ToStatusMap converts a typed status struct to its JSON form for ApplyStatus.
func ToStatusMap(status any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(status)
}

// boundMessages cuts every string field named message in v, a status in its
// JSON form, to message.MaxBytes.
func boundMessages(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, field := range v {
			if s, ok := field.(string); ok && k == "message" {
				v[k] = message.Truncate(s)
				continue
			}
			boundMessages(field)
		}
	case []any:
		for _, item := range v {
			boundMessages(item)
		}
	}
}

// BoundConditions cuts the message of each of obj's conditions to
// message.MaxBytes, as ApplyStatus does, and gives a condition whose status,
// reason and cut message are those of its type in stored (the conditions as
// read from the API server, copied before any was set) stored's
// lastTransitionTime back: conditions.Set compared the whole new message
// with the cut one read back and took the difference for a transition.
//
// Call it once the reconcile has set its conditions, before the status is
// compared or written: a status written some other way than by ApplyStatus
// (notification-controller's patch helper) is bounded by it, and one that
// did not change is not written again.
func BoundConditions(obj conditions.Setter, stored []metav1.Condition) {
	conds := obj.GetConditions()
	for i := range conds {
		c := &conds[i]
		c.Message = message.Truncate(c.Message)
		if old := apimeta.FindStatusCondition(stored, c.Type); old != nil &&
			old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	obj.SetConditions(conds)
}
