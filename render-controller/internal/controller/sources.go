package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/kinds"
)

// The source kinds a Kustomization's spec.sourceRef may name (the CRD's
// enum): each has a tar.gz artifact in status.artifact that
// render-controller downloads and builds the same way. GitRepository and
// OCIRepository are source-controller's; an ExternalArtifact's is written
// by any producer (Flux's generic kind), and its spec.sourceRef, the
// producer's object, is named while the artifact is missing.

// sourceKinds are the kinds render-controller reads and watches: those a
// Kustomization may name (pkg/kinds' Source).
var sourceKinds = kinds.Where(func(k kinds.Kind) bool { return k.Source })

// newSource returns an empty object of a source kind, nil for another kind.
func newSource(kind string) client.Object {
	k, ok := kinds.Lookup(kind)
	if !ok || !k.Source || k.GVK.Kind != kind {
		return nil
	}
	return k.New()
}

// sourceArtifact returns the artifact a source object serves.
func sourceArtifact(o client.Object) *meta.Artifact {
	if h, ok := o.(meta.ArtifactHolder); ok {
		return h.GetArtifact()
	}
	return nil
}

// producedFrom says, for an ExternalArtifact naming its producer's
// object, " (produced from <kind> <namespace>/<name>)"; "" otherwise.
func producedFrom(o client.Object) string {
	e, ok := o.(*sourcev1.ExternalArtifact)
	if !ok || e.Spec.SourceRef == nil {
		return ""
	}
	ref := e.Spec.SourceRef
	ns := ref.Namespace
	if ns == "" {
		ns = e.Namespace
	}
	return fmt.Sprintf(" (produced from %s %s/%s)", ref.Kind, ns, ref.Name)
}

// sourceIndexValue is the index value of a source object of kind at key:
// one index holds every kind, "<kind>/<namespace>/<name>".
func sourceIndexValue(kind string, key types.NamespacedName) string {
	return fmt.Sprintf("%s/%s", kind, key)
}

// sourceIndexValues indexes a Kustomization by the source it names.
func sourceIndexValues(o client.Object) []string {
	k := o.(*kustomizev1.Kustomization)
	if newSource(k.Spec.SourceRef.Kind) == nil {
		return nil
	}
	return []string{sourceIndexValue(k.Spec.SourceRef.Kind, sourceKey(k))}
}
