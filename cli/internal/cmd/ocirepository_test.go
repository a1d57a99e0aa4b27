package cmd

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// --with-source reconciles the Kustomization's source of the kind it
// names: an OCIRepository, not a GitRepository of the same name.
func TestReconcileWithSourceFollowsTheSourceKind(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	oci := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example/org/repo", Interval: metav1.Duration{Duration: time.Minute}},
	}
	git := gitRepo(ns, "repo")
	ks := kustomization(ns, "app", "repo")
	ks.Spec.SourceRef.Kind = sourcev1.OCIRepositoryKind
	create(ctx, t, oci, git, ks)
	standIn(t, oci, outcome{ready: true, message: "stored"}, writeOCIRepository)
	standIn(t, ks, outcome{ready: true, message: "applied", revision: "latest@sha256:" + strings.Repeat("a", 64)}, writeKustomization)

	r := plumb("reconcile", "ks", "app", "--with-source", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ OCIRepository/" + ns + "/repo reconciled"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(git), git)).To(Succeed())
	g.Expect(git.Annotations).NotTo(HaveKey(meta.ReconcileRequestAnnotation), "the GitRepository of the same name is not the source")

	// plumb get sources oci lists it.
	r = plumb("get", "sources", "oci", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("repo"))

	// Flux's spelling reconciles the OCIRepository itself.
	r = plumb("reconcile", "source", "oci", "repo", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ OCIRepository/" + ns + "/repo reconciled"))
}

// writeOCIRepository sets an OCIRepository's status as source-controller
// would, without an artifact.
func writeOCIRepository(o *sourcev1.OCIRepository, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "pulling "+o.Spec.URL, o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, r.message, o.Generation)}
}
