package engine

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
	"plumb.dev/pkg/manage"
)

// How one object asks to be written, from its own annotations: Plumb's,
// and Argo CD's sync options where Plumb has none of its own
// (docs/design/argocd.md).

// mayRecreate reports whether desired may be deleted and created again
// when the API server refuses a change in place (an immutable field):
// spec.force, plumb.dev/force: enabled, or, without plumb.dev/force,
// Argo CD's Force=true.
func mayRecreate(opts Options, desired *unstructured.Unstructured) bool {
	if opts.Force {
		return true
	}
	ann := desired.GetAnnotations()
	if v, ok := ann[kustomizev1.ForceAnnotation]; ok {
		return v == kustomizev1.EnabledValue
	}
	return argocd.HasSyncOption(ann, argocd.Force)
}

// replaces reports whether desired is written whole (Argo CD's
// Replace=true: kubectl replace, or create when it does not exist)
// instead of server-side applied: fields that Git does not set are
// cleared, whoever set them.
func replaces(desired *unstructured.Unstructured) bool {
	return argocd.HasSyncOption(desired.GetAnnotations(), argocd.Replace)
}

// SkipsDryRunWhenKindMissing reports whether obj may wait for its kind
// until its own wave (Argo CD's SkipDryRunOnMissingResource=true): a
// custom resource whose CRD another object of an earlier wave installs,
// an operator typically. Prepare lets it through when its kind is not
// served yet; its apply fails, in its wave, if it still is not.
func SkipsDryRunWhenKindMissing(obj *unstructured.Unstructured) bool {
	return argocd.HasSyncOption(obj.GetAnnotations(), argocd.SkipDryRunOnMissingResource)
}

// replace writes obj whole as plumb-sync: an update of the live object's
// resource version, or a create when there is none.
func (e *Engine) replace(ctx context.Context, obj *unstructured.Unstructured) error {
	obj.SetManagedFields(nil)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := e.client.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		obj.SetResourceVersion("")
		return e.client.Create(ctx, obj, client.FieldOwner(manage.FieldManager))
	case err != nil:
		return err
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	return e.client.Update(ctx, obj, client.FieldOwner(manage.FieldManager))
}
