package cmd

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

const awaitingMessage = "the deletion waits for a confirmation: 1 object(s) ask for one: ConfigMap/x/db (annotation argocd.argoproj.io/sync-options: Delete=confirm). Nothing was deleted"

// deletingAwaitingConfirmation creates a Kustomization held by
// sync-controller's finalizer, deletes it and sets the status
// sync-controller writes while the deletion waits for a confirmation.
func deletingAwaitingConfirmation(ctx context.Context, t *testing.T, ns, name string) *kustomizev1.Kustomization {
	ks := kustomization(ns, name, "app")
	ks.Finalizers = []string{kustomizev1.SyncFinalizer}
	create(ctx, t, ks)
	setStatus(ctx, t, ks, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.DeletionConfirmationRequiredReason, awaitingMessage, k.Generation)}
	})
	NewWithT(t).Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	NewWithT(t).Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), ks, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})
	return ks
}

// confirmation-awaiting deletions are confirmed with a time not before the
// deletion, and the command waits for the object to be gone (here a
// stand-in for sync-controller releases the finalizer once it sees it).
func TestConfirmDeleteAnnotatesTheDeletionAndWaitsUntilItIsGone(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := deletingAwaitingConfirmation(ctx, t, ns, "app")
	released := make(chan string, 1)
	go func() {
		for ctx.Err() == nil {
			cur := &kustomizev1.Kustomization{}
			if env.Client.Get(ctx, client.ObjectKeyFromObject(ks), cur) == nil {
				if at, ok := cur.Annotations[kustomizev1.ConfirmDeleteAnnotation]; ok {
					cur.Finalizers = nil
					if env.Client.Update(ctx, cur) == nil {
						released <- at
						return
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	r := plumb("confirm-delete", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[0]).To(Equal("◎ " + awaitingMessage))
	g.Expect(out[1]).To(HavePrefix("► deletion of Kustomization/" + ns + "/app confirmed at "))
	g.Expect(out[len(out)-1]).To(Equal("✔ Kustomization/" + ns + "/app deleted"))
	var at string
	g.Eventually(released).Should(Receive(&at))
	confirmedAt, err := time.Parse(time.RFC3339, at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(confirmedAt).NotTo(BeTemporally("<", ks.DeletionTimestamp.Time))
}

func TestConfirmDeleteRefusesWhatDoesNotWaitAndDeleteSaysItWaits(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	live := kustomization(ns, "live", "app")
	create(ctx, t, live)
	r := plumb("confirm-delete", "kustomization", "live", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("Kustomization/" + ns + "/live is not a deletion waiting for a confirmation"))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(live), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.ConfirmDeleteAnnotation))

	// plumb delete --wait on a deletion that waits for a person says so
	// instead of waiting until its timeout.
	deletingAwaitingConfirmation(ctx, t, ns, "held")
	r = plumb("delete", "kustomization", "held", "-n", ns, "--wait")
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring("Kustomization/" + ns + "/held: " + awaitingMessage))
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, got)
	g.Expect(err).NotTo(HaveOccurred(), "the held deletion is still there: %v", apierrors.ReasonForError(err))
}
