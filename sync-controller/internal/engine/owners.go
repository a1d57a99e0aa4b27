package engine

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// LiveMetadata returns the metadata of the live object like names, as the
// label-filtered watch cache has it (objects with this engine's kind of
// ownership labels, whichever owner they name), or nil when it is not
// there: gone, or never managed by an owner of this kind.
func (e *Engine) LiveMetadata(ctx context.Context, like *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	return e.lookupWatched(ctx, like)
}

// SharedObject is an object of a render that another Kustomization or
// HelmRelease manages.
type SharedObject struct {
	ID    object.ID
	Owner manage.Owner
}

func (s SharedObject) String() string {
	return fmt.Sprintf("%s (managed by %s %s/%s)", s.ID, s.Owner.Kind, s.Owner.Namespace, s.Owner.Name)
}

// SharedWith returns the objects of objs that exist with the ownership
// labels of an owner other than owner. The watch cache answers for
// objects labelled for owner's kind; an object missing there (new, not
// managed, or managed by the other kind) is read from the API server, one
// GET each, so the check costs a request per such object and sync.
func (e *Engine) SharedWith(ctx context.Context, objs []*unstructured.Unstructured, owner manage.Owner) ([]SharedObject, error) {
	var shared []SharedObject
	for _, obj := range objs {
		var labels map[string]string
		live, err := e.lookupWatched(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the watch cache: %w", object.IDOf(obj), err)
		}
		if live != nil {
			labels = live.Labels
		} else {
			found, err := e.Get(ctx, obj)
			if err != nil {
				return nil, err
			}
			if found == nil {
				continue
			}
			labels = found.GetLabels()
		}
		if owner.Owns(labels) {
			continue
		}
		if other, ok := manage.OwnerOf(labels); ok {
			shared = append(shared, SharedObject{ID: object.IDOf(obj), Owner: other})
		}
	}
	return shared, nil
}
