package objectset

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sourcev1 "plumb.dev/api/source/v1"
)

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
