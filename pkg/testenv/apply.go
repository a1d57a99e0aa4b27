package testenv

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// ApplyAsSyncController applies the objects of a render (data, multi-document
// YAML) that are no hook the way sync-controller applies them for a
// (stamped, server-side apply as plumb-sync), and returns them: a cluster
// in sync with the render, for a test of what reads it.
func ApplyAsSyncController(ctx context.Context, t testing.TB, c client.Client, a *inspect.Applied, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := object.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	var done []*unstructured.Unstructured
	for _, o := range objs {
		if a.IsHook(o) {
			continue
		}
		if err := a.Prepare(c, o); err != nil {
			t.Fatal(err)
		}
		if err := manage.Apply(ctx, c, o); err != nil {
			t.Fatalf("applying %s: %v", o.GetName(), err)
		}
		done = append(done, o)
	}
	return done
}
