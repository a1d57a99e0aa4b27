package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
)

// RequestedAt returns the value of the reconcile.plumb.dev/requestedAt
// annotation, or "" when there is none.
func RequestedAt(obj client.Object) string {
	return obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
}

// RequestedPredicate passes updates that change the requestedAt annotation,
// so setting it to a new value (a webhook, `plumb reconcile`) triggers a
// reconcile at once. Combine it with GenerationChangedPredicate using Or.
type RequestedPredicate struct {
	predicate.Funcs
}

// Update passes when the annotation's value changed.
func (RequestedPredicate) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	now := RequestedAt(e.ObjectNew)
	return now != "" && now != RequestedAt(e.ObjectOld)
}

// Request asks for an immediate reconcile of obj: it sets the requestedAt
// annotation to a fresh token (the time, so each request differs from the
// last), with further spec fields and annotations in the same merge patch,
// and returns the token, which the controller copies to
// status.lastHandledReconcileAt once it has acted on it. `plumb reconcile`,
// `plumb resume` and the UI's actions all ask this way. The write is made
// with c's identity, so a caller without the right to patch obj gets the API
// server's Forbidden.
func Request(ctx context.Context, c client.Writer, obj client.Object, spec map[string]any, annotations map[string]string) (string, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	all := map[string]string{meta.ReconcileRequestAnnotation: token}
	maps.Copy(all, annotations)
	p := map[string]any{"metadata": map[string]any{"annotations": all}}
	if spec != nil {
		p["spec"] = spec
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return "", fmt.Errorf("annotating %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return token, nil
}
