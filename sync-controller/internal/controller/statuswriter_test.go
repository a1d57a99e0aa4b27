package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// A held write goes out from its timer while the run goes on reading its
// object: every event the run records reads the object's reference, a
// rollback's patch copies it. The write must leave that object alone, or
// the two race (go test -race found it in the HelmRelease retry test),
// and the writer must still know the version it stored, the precondition
// of its next write that carries the render.
func TestAHeldWriteLeavesTheRunsObjectAlone(t *testing.T) {
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Suspend = true })
	g := NewWithT(t)
	obj := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), obj)).To(Succeed())
	read := obj.GetResourceVersion()
	controllerMu.Lock()
	r := &running.Syncer
	controllerMu.Unlock()

	// The run started a progress interval ago, less 50 ms: its held write
	// goes out on the timer 50 ms after the hold.
	out := obj.DeepCopy()
	w := newStatusWriter(r, obj, appOf(obj), out, time.Now().Add(-progressEvery+50*time.Millisecond))
	g.Expect(w.mayLast(ctx)).To(Succeed())
	st := appOf(out).syncStatus()
	st.LastAttemptedRevision = "main@sha1:held"
	g.Expect(w.hold(ctx, st)).To(Succeed())

	stored := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		_ = obj.DeepCopy() // the run's goroutine reading its object meanwhile
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), stored)).To(Succeed())
		g.Expect(stored.Status.LastAttemptedRevision).To(Equal("main@sha1:held"))
	}, 10*time.Second, 5*time.Millisecond).Should(Succeed())
	g.Expect(obj.GetResourceVersion()).To(Equal(read), "the run's object is as read")

	w.mu.Lock()
	version := w.storedAt.GetResourceVersion()
	w.mu.Unlock()
	g.Expect(version).NotTo(Equal(read), "the writer holds the version its write stored")
	g.Expect(version).NotTo(BeEmpty())
}
