package drift

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

// Comparison is one desired object compared with the cluster.
type Comparison struct {
	// Live is the object as the cluster holds it; nil when it does not
	// exist, and then nothing else is set but Result (Created).
	Live *unstructured.Unstructured
	// Desired is the desired object with the fields the ignore rules name
	// set to their live values: what an apply would write. It is the
	// desired object itself when there are no rules.
	Desired *unstructured.Unstructured
	// DryRun is what the API server would store: its answer to the
	// server-side dry-run apply of Desired.
	DryRun *unstructured.Unstructured
	// Result compares Live with DryRun (pkg/diff).
	Result diff.Result
}

// Compare reads the live object of desired (which must have been through
// manage.Resolve and manage.Stamp) and diffs it with the server-side
// dry-run apply of desired as sync-controller would make it (manage.Apply:
// field manager plumb-sync, so fields it owns and no longer sets are
// dropped), leaving out the fields ig ignores and keeping their live
// values. desired is not modified.
//
// An object that does not exist is Created, with no request but the read.
// The error is the API server's, unwrapped: when it is from reading the
// live object, Comparison.Live is nil; when it is from the dry-run,
// Comparison.Live is set.
func Compare(ctx context.Context, c client.Client, desired *unstructured.Unstructured, ig *diff.Ignorer) (Comparison, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		if apierrors.IsNotFound(err) {
			return Comparison{Result: diff.Diff(nil, desired, ig)}, nil
		}
		return Comparison{}, err
	}
	cmp := Comparison{Live: live, Desired: desired}
	if ig != nil {
		// Ignored fields keep their live values: not reverted, and still
		// owned by plumb-sync so that no other field of ours is dropped.
		cmp.Desired = desired.DeepCopy()
		ig.KeepLive(cmp.Desired, live)
	}
	cmp.DryRun = cmp.Desired.DeepCopy()
	if err := manage.Apply(ctx, c, cmp.DryRun, client.DryRunAll); err != nil {
		cmp.DryRun = nil
		return cmp, err
	}
	cmp.Result = diff.Diff(live, cmp.DryRun, ig)
	return cmp, nil
}
