package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/reconcile"
)

// fetchState is what one reconcile's steps hand each other.
type fetchState struct{ revision string }

// A controller of two steps on the skeleton: fetch finds a revision and
// store serves it. The steps say only what happened; the skeleton turns
// it into conditions, observedGeneration, one status write and when to
// come back (the outcome table of the package documentation).
func Example() {
	remote := "main@sha1:0123abcd"
	sk := &reconcile.Controller[*sourcev1.GitRepository]{
		Condition: meta.ReadyCondition,
		Succeeded: func(obj *sourcev1.GitRepository) string {
			return "stored artifact for revision " + obj.Status.Artifact.Revision
		},
		// A real controller sets OwnedStatus, Client and FieldManager;
		// here the write is only shown.
		WriteStatus: func(_ context.Context, obj, _ *sourcev1.GitRepository) error {
			if ready := conditions.Get(obj, meta.ReadyCondition); ready != nil {
				fmt.Printf("status written: Ready=%s %s: %s\n", ready.Status, ready.Reason, ready.Message)
			} else {
				fmt.Printf("status written: Reconciling: %s\n", conditions.GetMessage(obj, meta.ReconcilingCondition))
			}
			return nil
		},
	}
	fetch := func(_ context.Context, _ *sourcev1.GitRepository, st *fetchState) error {
		if remote == "" {
			return reconcile.Failed(sourcev1.GitOperationFailedReason, errors.New("remote hung up"))
		}
		st.revision = remote
		return nil
	}
	store := func(_ context.Context, obj *sourcev1.GitRepository, st *fetchState) error {
		obj.Status.Artifact = &meta.Artifact{Revision: st.revision}
		return nil
	}
	reconcileOnce := func(obj *sourcev1.GitRepository) (time.Duration, error) {
		st := &fetchState{}
		result, err := sk.Run(context.Background(), obj,
			reconcile.Bind("fetch", fetch, obj, st),
			reconcile.Bind("store", store, obj, st),
		)
		return result.RequeueAfter, err
	}

	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "repo", Generation: 1},
		Spec:       sourcev1.GitRepositorySpec{Interval: metav1.Duration{Duration: time.Minute}},
	}
	after, err := reconcileOnce(obj)
	fmt.Println("back after about a minute:", after > 55*time.Second && after < 65*time.Second, "error:", err)

	remote = ""
	after, err = reconcileOnce(obj)
	fmt.Println("Reconciling:", conditions.GetReason(obj, meta.ReconcilingCondition), "requeue:", after, "error:", err)
	// Output:
	// status written: Reconciling: reconciling generation 1
	// status written: Ready=True Succeeded: stored artifact for revision main@sha1:0123abcd
	// back after about a minute: true error: <nil>
	// status written: Ready=False GitOperationFailed: remote hung up
	// Reconciling: ProgressingWithRetry requeue: 0s error: fetch step (GitOperationFailed): remote hung up
}
