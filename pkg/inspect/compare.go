package inspect

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// ObjectDiff is the outcome of comparing one object with the cluster; an
// empty Action with a Note is an object a sync leaves alone although the
// render no longer has it.
type ObjectDiff struct {
	ID      object.ID
	Action  diff.Action
	Changes []diff.Change
	Note    string
	Err     error
	// Live is the live object, when it was read.
	Live *unstructured.Unstructured
}

// Prepare makes obj what sync-controller applies (see pkg/manage): the
// default namespace, the ownership labels and the applied-hash
// annotation.
func (a *Applied) Prepare(c client.Client, obj *unstructured.Unstructured) error {
	if err := manage.Resolve(c.RESTMapper(), obj, a.Namespace); err != nil {
		return err
	}
	return a.Stamp(obj)
}

// Compare diffs one prepared desired object with the cluster through the
// dry-run apply sync-controller makes (drift.Compare): as its field
// manager, so the result is what its next apply would store, with ignored
// fields kept at their live values. An object annotated plumb.dev/ssa:
// IfNotPresent (a chart's crds/ CRD under the Create policy; Flux's ssa
// key alike, manage.CreateOnly) is created when missing and never
// changed, so an existing one matches whatever it holds. Nothing is redacted yet but Secrets' data (pkg/diff).
func Compare(ctx context.Context, c client.Client, desired *unstructured.Unstructured, ig *diff.Ignorer) ObjectDiff {
	id := object.IDOf(desired)
	if why := manage.Excluded(desired); why != "" {
		return ObjectDiff{ID: id, Action: diff.Unchanged, Note: why + ": never written by a sync"}
	}
	if manage.CreateOnly(desired) != "" {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(desired), live)
		switch {
		case apierrors.IsNotFound(err):
			return ObjectDiff{ID: id, Action: diff.Created, Note: "not in the cluster; a sync creates it"}
		case err != nil:
			return ObjectDiff{ID: id, Err: fmt.Errorf("reading the live object: %w", err)}
		}
		return ObjectDiff{ID: id, Action: diff.Unchanged, Live: live}
	}
	cmp, err := drift.Compare(ctx, c, desired, ig)
	switch {
	case err != nil && cmp.Live == nil:
		return ObjectDiff{ID: id, Err: fmt.Errorf("reading the live object: %w", err)}
	case err != nil:
		return ObjectDiff{ID: id, Err: fmt.Errorf("server-side dry-run apply: %w", err), Live: cmp.Live}
	case cmp.Live == nil:
		return ObjectDiff{ID: id, Action: diff.Created, Note: "not in the cluster; a sync creates it"}
	}
	return ObjectDiff{ID: id, Action: cmp.Result.Action, Changes: cmp.Result.Changes, Live: cmp.Live}
}
