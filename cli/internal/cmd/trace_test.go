package cmd

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// fieldOf returns the value of "Name:  value" lines in out, the first one.
func fieldOf(out, name string) string {
	for _, l := range lines(out) {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "<no " + name + ">"
}

func TestTrace(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	owned := map[string]string{kustomizev1.NameLabel: "app", kustomizev1.NamespaceLabel: ns}
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg", Labels: owned}}
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", Labels: owned}}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan",
		Labels: map[string]string{kustomizev1.NameLabel: "gone", kustomizev1.NamespaceLabel: ns}}}
	repo := gitRepo(ns, "repo")
	repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	ks := kustomization(ns, "app", "repo")
	ks.Spec.Path = "./deploy"
	ks.Spec.DriftPolicy = kustomizev1.DriftPolicyReport
	create(ctx, t, cfg, stray, plain, orphan, repo, ks)
	const rev = "main@sha1:6666666666666666666666666666666666666666"
	setStatus(ctx, t, repo, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact(rev)
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored artifact for "+rev, o.Generation)}
	})
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.LastAppliedRevision = rev
		o.Status.LastAttemptedRevision = rev
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "Applied revision "+rev, o.Generation)}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"}}}
		o.Status.Drift = &kustomizev1.DriftStatus{Count: 1, Paths: []string{"ConfigMap/" + ns + "/cfg:data.mode"}}
	})

	for _, kind := range []string{"configmap", "ConfigMap", "cm", "configmaps", "configmaps.v1."} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb("trace", kind, "cfg", "-n", ns)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(fieldOf(r.out, "Object")).To(Equal("ConfigMap/" + ns + "/cfg"))
			g.Expect(fieldOf(r.out, "Health")).To(HavePrefix("Healthy"))
			g.Expect(fieldOf(r.out, "Managed by")).To(Equal("Kustomization/" + ns + "/app"))
			g.Expect(fieldOf(r.out, "In inventory")).To(Equal("yes"))
			g.Expect(fieldOf(r.out, "Drift")).To(Equal("drifted data.mode"))
			g.Expect(fieldOf(r.out, "Kustomization")).To(Equal(ns + "/app"))
			g.Expect(fieldOf(r.out, "Path")).To(Equal("./deploy"))
			g.Expect(fieldOf(r.out, "Applied revision")).To(Equal(rev))
			g.Expect(fieldOf(r.out, "Sync status")).To(HavePrefix("OutOfSync (1 object(s) differ from Git)"))
			g.Expect(fieldOf(r.out, "GitRepository")).To(Equal(ns + "/repo"))
			g.Expect(fieldOf(r.out, "URL")).To(Equal("https://git.example.com/org/repo.git"))
			g.Expect(fieldOf(r.out, "Reference")).To(Equal("branch main"))
			g.Expect(fieldOf(r.out, "Revision")).To(Equal(rev))
		})
	}

	t.Run("labelled but not in the inventory", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("trace", "configmap", "stray", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(fieldOf(r.out, "In inventory")).To(HavePrefix("no "))
		g.Expect(fieldOf(r.out, "Drift")).To(Equal("none"))
	})
	t.Run("cluster-scoped", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("trace", "namespace", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("Namespace/" + ns + " is not managed by Plumb"))
	})
	t.Run("not managed", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("trace", "configmap", "plain", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("ConfigMap/" + ns + "/plain is not managed by Plumb"))
	})
	t.Run("orphan", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("trace", "configmap", "orphan", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("managed by Kustomization " + ns + "/gone, which does not exist"))
	})
	t.Run("not found and unknown kind", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("trace", "configmap", "nothere", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("ConfigMap nothere not found in namespace " + ns))
		r = plumb("trace", "frobnicator", "x", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(`the server does not know the kind "frobnicator"`))
	})
	g.Expect(ns).NotTo(BeEmpty())
}
