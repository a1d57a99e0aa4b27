package objectset

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// confirmPruneChanged passes updates that change the confirm-prune
// annotation, so a confirmation is acted on at once.
type confirmPruneChanged struct{ predicate.Funcs }

func (confirmPruneChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	return e.ObjectOld.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation] != e.ObjectNew.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation]
}

// artifactChanged passes a GitRepository's creation, deletion and the
// updates that change its artifact's digest: the only change a git
// generator reads.
type artifactChanged struct{ predicate.Funcs }

func (artifactChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*sourcev1.GitRepository)
	n, ok2 := e.ObjectNew.(*sourcev1.GitRepository)
	if !ok1 || !ok2 {
		return true
	}
	return digestOf(o) != digestOf(n)
}

func digestOf(r *sourcev1.GitRepository) string {
	if r.Status.Artifact == nil {
		return ""
	}
	return r.Status.Artifact.Digest
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }
