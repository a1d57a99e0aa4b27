package engine

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/manage"
)

// How one object asks to be written, from its own annotations: Plumb's,
// and Argo CD's sync options where Plumb has none of its own
// (docs/design/argocd.md).

// mayRecreate reports whether desired may be deleted and created again
// when the API server refuses a change in place (an immutable field):
// spec.force, plumb.dev/force: enabled, or, without plumb.dev/force,
// Flux's force: enabled (on the object in Git or, as Flux reads it, in
// the cluster: live, nil when unknown) or Argo CD's Force=true.
func mayRecreate(opts Options, desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata) bool {
	if opts.Force {
		return true
	}
	ann := desired.GetAnnotations()
	if v, ok := ann[kustomizev1.ForceAnnotation]; ok {
		return v == kustomizev1.EnabledValue
	}
	return flux.MayRecreate(desired) || (live != nil && flux.MayRecreate(live)) ||
		argocd.HasSyncOption(ann, argocd.Force)
}

// excluded names the label or annotation that keeps desired from any
// write (manage.Excluded), read on the object in Git and on the one in
// the cluster (live, nil when there is none) as Flux reads it.
func excluded(desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata) string {
	if why := manage.Excluded(desired); why != "" {
		return why
	}
	if live != nil {
		return manage.Excluded(live)
	}
	return ""
}

// driftDetectionOff reports whether an existing object of a HelmRelease
// is left as it is although it may differ: Flux's helm-controller
// annotation driftDetection: disabled, on the object in Git or in the
// cluster, keeps it out of drift correction, while a new render (another
// hash than the one applied last) is still applied, as an upgrade is.
func driftDetectionOff(opts Options, desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata, hash string) bool {
	if opts.Owner.Kind != helmv2.HelmReleaseKind || live.Annotations[manage.AppliedHashAnnotation] != hash {
		return false
	}
	return flux.DriftDetectionDisabled(desired) || flux.DriftDetectionDisabled(live)
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
