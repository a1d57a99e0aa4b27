package request

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
)

// Annotation returns obj's newest reconcile request: the value of its
// reconcile.plumb.dev/requestedAt annotation or of Flux's
// reconcile.fluxcd.io/requestedAt, "" when there is neither. With both,
// it is the later time (both tools write RFC 3339 times), Plumb's when
// either is not a time. A tool waits for its own token in
// status.lastHandledReconcileAt, so the newest request is the one to
// answer: an older one was answered before, or is covered by it.
func Annotation(obj client.Object) string {
	ann := obj.GetAnnotations()
	own, flux := ann[meta.ReconcileRequestAnnotation], ann[meta.FluxReconcileRequestAnnotation]
	switch {
	case flux == "" || flux == own:
		return own
	case own == "":
		return flux
	}
	ownAt, errOwn := time.Parse(time.RFC3339Nano, own)
	fluxAt, errFlux := time.Parse(time.RFC3339Nano, flux)
	if errOwn == nil && errFlux == nil && fluxAt.After(ownAt) {
		return flux
	}
	return own
}

// Reconcile asks for an immediate reconcile of obj: it sets the
// requestedAt annotation to a fresh token (the time, so each request
// differs from the last), with further spec fields and annotations in the
// same merge patch, and returns the token, which the controller copies to
// status.lastHandledReconcileAt once it has acted on it. The write is made
// with c's identity, so a caller without the right to patch obj gets the
// API server's Forbidden.
func Reconcile(ctx context.Context, c client.Writer, obj client.Object, spec map[string]any, annotations map[string]string) (string, error) {
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
