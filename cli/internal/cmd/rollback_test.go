package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

const (
	rollbackDigest1 = "sha256:1111000000000000000000000000000000000000000000000000000000000000"
	rollbackDigest2 = "sha256:2222000000000000000000000000000000000000000000000000000000000000"
	rollbackDigest3 = "sha256:3333000000000000000000000000000000000000000000000000000000000000"
)

// applied3 sets the status of a Kustomization that applied three commits,
// the third now.
func applied3(k *kustomizev1.Kustomization) {
	k.Status.ObservedGeneration = k.Generation
	a := artifact("main@sha1:c3")
	a.Digest = rollbackDigest3
	k.Status.RenderedArtifact = a
	k.Status.LastAppliedRevision = "main@sha1:c3"
	now := metav1.Now()
	for _, e := range []struct{ digest, rev string }{{rollbackDigest3, "main@sha1:c3"}, {rollbackDigest2, "main@sha1:c2"}, {rollbackDigest1, "main@sha1:c1"}} {
		k.Status.History = append(k.Status.History, meta.Snapshot{
			Digest: e.digest, FirstReconciled: now, LastReconciled: now, LastReconciledStatus: meta.SucceededReason,
			TotalReconciliations: 1, Metadata: map[string]string{meta.HistoryRevisionKey: e.rev},
		})
	}
	k.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "Applied revision: main@sha1:c3", k.Generation)}
}

func TestRollbackAnnotatesTheEntryBeforeTheAppliedOneAndWaits(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	create(ctx, t, ks)
	setStatus(ctx, t, ks, applied3)
	standIn(t, ks, outcome{ready: true, message: "Applied revision: main@sha1:c2; rolled back to revision main@sha1:c2", revision: "main@sha1:c2"}, writeKustomization)

	r := plumb("rollback", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[0]).To(Equal("► Kustomization/" + ns + "/app rolled back to revision main@sha1:c2 (history entry 1); held until plumb resume kustomization app"))
	g.Expect(out[len(out)-1]).To(Equal("✔ Kustomization/" + ns + "/app reconciled, revision main@sha1:c2"))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.RollbackAnnotation, rollbackDigest2))
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.RollbackFollowGitAnnotation))

	// --to 2 --follow-git: the oldest entry, and the render current now
	// recorded for the hold to end at the next one.
	r = plumb("rollback", "ks", "app", "-n", ns, "--to", "2", "--follow-git")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)[0]).To(ContainSubstring("rolled back to revision main@sha1:c1 (history entry 2); held until the next new revision, or plumb resume kustomization app"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.RollbackAnnotation, rollbackDigest1))
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.RollbackFollowGitAnnotation, rollbackDigest3))

	// resume ends the hold: both annotations go.
	r = plumb("resume", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)[0]).To(Equal("► Kustomization/" + ns + "/app: rollback ended"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.RollbackAnnotation))
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.RollbackFollowGitAnnotation))
}

func TestRollbackRefusesAnEntryTheHistoryDoesNotHave(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	fresh := kustomization(ns, "fresh", "app")
	create(ctx, t, ks, fresh)
	setStatus(ctx, t, ks, applied3)

	for _, to := range []string{"0", "3", "-1"} {
		r := plumb("rollback", "kustomization", "app", "-n", ns, "--to", to)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("Kustomization/" + ns + "/app has 3 entries in status.history: --to must be between 1 and 2"))
	}
	r := plumb("rollback", "kustomization", "fresh", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("has 0 entries in status.history"))

	for _, name := range []string{"app", "fresh"} {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.RollbackAnnotation), name)
	}
}
