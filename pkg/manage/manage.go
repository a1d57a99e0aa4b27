package manage

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/kinds"
)

// FieldManager is the field manager of every write sync-controller makes to
// managed objects.
var FieldManager = kinds.FieldManager(kinds.SyncController)

// AppliedHashAnnotation holds the hash of the desired object last applied.
const AppliedHashAnnotation = "plumb.dev/applied-hash"

// Owner names the Kustomization or HelmRelease that manages an object.
type Owner struct {
	// Kind is kustomizev1.KustomizationKind or helmv2.HelmReleaseKind;
	// empty is a Kustomization.
	Kind      string
	Namespace string
	Name      string
}

// ownerKinds are the kinds that manage objects, in the order OwnerOf
// tries their labels.
var ownerKinds = []string{kustomizev1.KustomizationKind, helmv2.HelmReleaseKind}

// LabelKeys returns the keys of the owner's name and namespace labels:
// kustomize.plumb.dev/name|namespace for a Kustomization,
// helm.plumb.dev/name|namespace for a HelmRelease. The keys differ so that
// a Kustomization and a HelmRelease of the same name in one namespace
// never take each other's objects for their own.
func (o Owner) LabelKeys() (name, namespace string) { return LabelKeys(o.Kind) }

// LabelKeys returns the ownership label keys of a kind (see Owner.LabelKeys).
func LabelKeys(kind string) (name, namespace string) {
	if kind == helmv2.HelmReleaseKind {
		return helmv2.NameLabel, helmv2.NamespaceLabel
	}
	return kustomizev1.NameLabel, kustomizev1.NamespaceLabel
}

// Owns reports whether an object's labels name this owner.
func (o Owner) Owns(labels map[string]string) bool {
	nameKey, nsKey := o.LabelKeys()
	name, ok := labels[nameKey]
	return ok && name == o.Name && labels[nsKey] == o.Namespace
}

// OwnerOf returns the owner recorded in an object's labels, if any: its
// Kustomization, else its HelmRelease.
func OwnerOf(labels map[string]string) (Owner, bool) {
	for _, kind := range ownerKinds {
		if o, ok := OwnerOfKind(kind, labels); ok {
			return o, true
		}
	}
	return Owner{}, false
}

// OwnerOfKind returns the owner of the kind recorded in an object's
// labels, if any.
func OwnerOfKind(kind string, labels map[string]string) (Owner, bool) {
	nameKey, nsKey := LabelKeys(kind)
	name, ok := labels[nameKey]
	if !ok {
		return Owner{}, false
	}
	return Owner{Kind: kind, Namespace: labels[nsKey], Name: name}, true
}

// Pruning is why objects are being deleted, which decides what their
// annotations keep.
type Pruning int

const (
	// LeftTheSet is a sync's prune of objects Git no longer has.
	LeftTheSet Pruning = iota
	// OwnerDeleted is the prune of everything a deleted Kustomization or
	// HelmRelease applied.
	OwnerDeleted
)

// KeptBy says which label or annotation of an object in the cluster
// keeps it from the prune p, written as a message quotes it ("annotation
// plumb.dev/prune: disabled"), empty when none does.
//
//   - plumb.dev/prune: disabled and helm.sh/resource-policy: keep (read as
//     Helm reads it: trimmed, any case) keep it from both prunes;
//   - Flux's prune: disabled, reconcile: disabled and ssa: Ignore keep it
//     from both, as in Flux (pkg/flux), unless plumb.dev/prune is set,
//     which then decides;
//   - Argo CD's sync options keep it from one each, as in Argo CD:
//     Prune=false from a sync's prune, Delete=false from the deletion of
//     its owner.
func KeptBy(m flux.Metadata, p Pruning) string {
	annotations := m.GetAnnotations()
	plumbPrune, plumbSet := annotations[kustomizev1.PruneAnnotation]
	switch {
	case plumbPrune == kustomizev1.DisabledValue:
		return "annotation " + kustomizev1.PruneAnnotation + ": " + kustomizev1.DisabledValue
	case strings.EqualFold(strings.TrimSpace(annotations[helmv2.ResourcePolicyAnnotation]), helmv2.KeepPolicy):
		return "annotation " + helmv2.ResourcePolicyAnnotation + ": " + helmv2.KeepPolicy
	case p == LeftTheSet && argocd.HasSyncOption(annotations, argocd.PruneDisabled):
		return "annotation " + argocd.SyncOptionsAnnotation + ": " + argocd.PruneDisabled
	case p == OwnerDeleted && argocd.HasSyncOption(annotations, argocd.DeleteDisabled):
		return "annotation " + argocd.SyncOptionsAnnotation + ": " + argocd.DeleteDisabled
	}
	if f, ok := flux.KeptFromPrune(m); ok && !(plumbSet && f.Key == flux.PruneKey) {
		return f.String()
	}
	return ""
}

// ConfirmationAskedBy says which annotation of an object in the cluster
// asks for a person's confirmation before the prune p deletes it, written
// as a message quotes it, empty when none does: plumb.dev/prune: confirm
// for both prunes, Argo CD's Prune=confirm for a sync's and Delete=confirm
// for its owner's deletion. An object KeptBy keeps is never deleted, so it
// asks for nothing.
func ConfirmationAskedBy(m flux.Metadata, p Pruning) string {
	if KeptBy(m, p) != "" {
		return ""
	}
	annotations := m.GetAnnotations()
	switch {
	case annotations[kustomizev1.PruneAnnotation] == kustomizev1.ConfirmValue:
		return "annotation " + kustomizev1.PruneAnnotation + ": " + kustomizev1.ConfirmValue
	case p == LeftTheSet && argocd.HasSyncOption(annotations, argocd.PruneConfirm):
		return "annotation " + argocd.SyncOptionsAnnotation + ": " + argocd.PruneConfirm
	case p == OwnerDeleted && argocd.HasSyncOption(annotations, argocd.DeleteConfirm):
		return "annotation " + argocd.SyncOptionsAnnotation + ": " + argocd.DeleteConfirm
	}
	return ""
}

// CreateOnly says which annotation of the object in Git, desired, asks
// that it be created when missing and never written once it exists:
// plumb.dev/ssa: IfNotPresent, or without plumb.dev/ssa, Flux's ssa:
// IfNotPresent. Empty when none does.
func CreateOnly(desired flux.Metadata) string {
	if v, ok := desired.GetAnnotations()[kustomizev1.SSAAnnotation]; ok {
		if v == kustomizev1.IfNotPresentValue {
			return "annotation " + kustomizev1.SSAAnnotation + ": " + v
		}
		return ""
	}
	if f, ok := flux.CreateOnly(desired); ok {
		return f.String()
	}
	return ""
}

// Excluded says which label or annotation of an object keeps it from
// every write: Flux's reconcile: disabled or ssa: Ignore, which Flux reads
// on the object in Git and on the one in the cluster alike (call it for
// both); Flux's ssa is not read where plumb.dev/ssa is set. Empty when
// none does.
func Excluded(m flux.Metadata) string {
	f, ok := flux.Excluded(m)
	if !ok {
		return ""
	}
	if _, plumbSSA := m.GetAnnotations()[kustomizev1.SSAAnnotation]; plumbSSA && f.Key == flux.SSAKey {
		return ""
	}
	return f.String()
}

// Stamp adds the owner's labels to obj and returns the hash of the result,
// which it also records in the applied-hash annotation. The hash leaves the
// annotation itself out, so stamping twice gives the same hash. The owner
// labels of the other kinds are removed: an object has one owner, and a
// chart (or a Kustomization's Git) that renders another kind's labels
// would otherwise hand the object to that owner's watch, prune and drift
// correction, or wake it.
func Stamp(obj *unstructured.Unstructured, owner Owner) (string, error) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	nameKey, nsKey := owner.LabelKeys()
	for _, kind := range ownerKinds {
		if otherName, otherNamespace := LabelKeys(kind); otherName != nameKey {
			delete(labels, otherName)
			delete(labels, otherNamespace)
		}
	}
	labels[nameKey] = owner.Name
	labels[nsKey] = owner.Namespace
	obj.SetLabels(labels)

	annotations := obj.GetAnnotations()
	delete(annotations, AppliedHashAnnotation)
	obj.SetAnnotations(annotations)
	hash, err := diff.Hash(obj)
	if err != nil {
		return "", err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AppliedHashAnnotation] = hash
	obj.SetAnnotations(annotations)
	return hash, nil
}

// Resolve checks that obj's kind is served, fills in its version when it
// names none (the preferred one), and gives it defaultNamespace when it is
// namespaced and has none, or no namespace when it is cluster-scoped. An
// unserved kind is an error wrapping the mapper's NoKindMatch error.
func Resolve(mapper apimeta.RESTMapper, obj *unstructured.Unstructured, defaultNamespace string) error {
	gvk := obj.GroupVersionKind()
	var versions []string
	if gvk.Version != "" {
		versions = []string{gvk.Version}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), versions...)
	if err != nil {
		if apimeta.IsNoMatchError(err) {
			return fmt.Errorf("%s %s: the kind %s is not served by the API server (is its CRD installed?): %w",
				gvk.Kind, obj.GetName(), gvk.GroupVersion().WithKind(gvk.Kind), err)
		}
		return err
	}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if mapping.Scope.Name() != apimeta.RESTScopeNameNamespace {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		obj.SetNamespace(defaultNamespace)
	}
	return nil
}
