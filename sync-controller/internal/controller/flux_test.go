package controller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// configMapLabelled is a ConfigMap with the labels, a YAML flow map's
// inside ("a: b, c: d").
func configMapLabelled(ns, name, labels, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {%s}\ndata:\n  key: %q\n", name, ns, labels, value)
}

// TestFluxAnnotationsKeepWhatFluxKeeps is the migration story of a
// repository written for Flux: synced under Plumb, then its objects leave
// Git. What Flux would keep — prune: disabled as an annotation or a label,
// reconcile: disabled and ssa: Ignore, in Git or set in the cluster —
// Plumb keeps, on a sync's prune and on the Kustomization's deletion;
// ssa: IfNotPresent creates only; force: enabled recreates; a Plumb
// annotation that disagrees wins and is named in the status.
func TestFluxAnnotationsKeepWhatFluxKeeps(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.MaxPrunePercent = ptr.To[int32](100) })
	ns := ks.Namespace
	frozen := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: %s\n  annotations: {kustomize.toolkit.fluxcd.io/force: enabled}\nimmutable: true\ndata:\n  key: %s\n", ns, v)
	}
	objects := func(v string) string {
		return annotatedConfigMap(ns, "no-prune", `kustomize.toolkit.fluxcd.io/prune: disabled`, v) + "---\n" +
			configMapLabelled(ns, "no-prune-label", `kustomize.toolkit.fluxcd.io/prune: Disabled`, v) + "---\n" +
			annotatedConfigMap(ns, "ignored", `kustomize.toolkit.fluxcd.io/ssa: Ignore`, v) + "---\n" +
			annotatedConfigMap(ns, "paused", `kustomize.toolkit.fluxcd.io/reconcile: disabled`, v) + "---\n" +
			annotatedConfigMap(ns, "create-only", `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`, v) + "---\n" +
			annotatedConfigMap(ns, "plumb-wins", `plumb.dev/prune: enabled, kustomize.toolkit.fluxcd.io/prune: disabled`, v) + "---\n" +
			annotatedConfigMap(ns, "paused-in-cluster", `team: a`, v) + "---\n" +
			frozen(v) + "---\n" +
			configMaps(ns, "plain", "gone")
	}
	render(t, ks, "main@sha1:f1", objects("one"))
	got := waitReady(t, ks, "main@sha1:f1")
	for _, name := range []string{"no-prune", "no-prune-label", "create-only", "plumb-wins", "paused-in-cluster", "frozen", "plain"} {
		g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, name)).To(BeTrue(), name)
	}
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "ignored")).To(BeFalse(), "ssa: Ignore is never applied")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "paused")).To(BeFalse(), "reconcile: disabled in Git is never applied, as in Flux")
	g.Expect(got.Status.Sync.Warnings).To(ConsistOf(
		"ConfigMap/" + ns + `/plumb-wins: plumb.dev/prune: "enabled" is followed, not annotation kustomize.toolkit.fluxcd.io/prune: disabled`,
	))

	// Someone pauses one object in the cluster, and edits two.
	pause := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "paused-in-cluster"}, pause)).To(Succeed())
	patch := client.MergeFrom(pause.DeepCopy())
	pause.Annotations["kustomize.toolkit.fluxcd.io/reconcile"] = "disabled"
	pause.Data["key"] = "edited"
	g.Expect(env.Client.Patch(ctx, pause, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
	createOnly := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "create-only"}, createOnly)).To(Succeed())
	patch = client.MergeFrom(createOnly.DeepCopy())
	createOnly.Data["key"] = "edited"
	g.Expect(env.Client.Patch(ctx, createOnly, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())

	// A new commit changes every value: the paused and create-only objects
	// keep theirs, the frozen one is recreated.
	render(t, ks, "main@sha1:f2", objects("two"))
	waitReady(t, ks, "main@sha1:f2")
	g.Expect(configMapKey(ctx, ns, "no-prune")).To(Equal("two"))
	g.Expect(configMapKey(ctx, ns, "frozen")).To(Equal("two"), "force: enabled recreates an immutable ConfigMap")
	g.Expect(configMapKey(ctx, ns, "create-only")).To(Equal("edited"), "ssa: IfNotPresent never writes an existing object")
	g.Expect(configMapKey(ctx, ns, "paused-in-cluster")).To(Equal("edited"), "reconcile: disabled in the cluster stops every write")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "paused")).To(BeFalse())

	// All but one object leave Git.
	render(t, ks, "main@sha1:f3", configMaps(ns, "plain"))
	waitReady(t, ks, "main@sha1:f3")
	waitGone(ctx, g, ns, "gone", "plumb-wins", "frozen", "create-only")
	for _, name := range []string{"no-prune", "no-prune-label", "paused-in-cluster"} {
		g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, name)).To(BeTrue(), "%s is kept from the prune", name)
	}

	// Back in Git, then the Kustomization is deleted: Flux's keys keep
	// their objects from the deletion's prune too.
	render(t, ks, "main@sha1:f4", objects("three"))
	waitReady(t, ks, "main@sha1:f4")
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 30*time.Second).Should(BeFalse())
	waitGone(ctx, g, ns, "plain", "gone", "plumb-wins")
	for _, name := range []string{"no-prune", "no-prune-label", "paused-in-cluster"} {
		g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, name)).To(BeTrue(), "%s is kept from the deletion", name)
	}
}

// TestFluxApplyPoliciesOverrideAndMerge: a label kubectl added (its
// client-side apply and its server-side apply) is taken back from an
// object marked ssa: Override and left on one marked ssa: Merge, as Flux
// does; another tool's field stays on both.
func TestFluxApplyPoliciesOverrideAndMerge(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	objects := func(v string) string {
		return annotatedConfigMap(ns, "override", `kustomize.toolkit.fluxcd.io/ssa: Override`, v) + "---\n" +
			annotatedConfigMap(ns, "merge", `kustomize.toolkit.fluxcd.io/ssa: Merge`, v)
	}
	render(t, ks, "main@sha1:o1", objects("one"))
	waitReady(t, ks, "main@sha1:o1")

	for _, name := range []string{"override", "merge"} {
		// kubectl apply (client-side): an Update with its manager and the
		// last-applied annotation.
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Labels["by-kubectl"] = "yes"
		cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
		g.Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("kubectl-client-side-apply"))).To(Succeed())
		// kubectl apply --server-side.
		ssa := &unstructured.Unstructured{}
		ssa.SetAPIVersion("v1")
		ssa.SetKind("ConfigMap")
		ssa.SetNamespace(ns)
		ssa.SetName(name)
		ssa.SetAnnotations(map[string]string{"by-kubectl-ssa": "yes"})
		g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(ssa), client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed())
		// Another tool.
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		patch = client.MergeFrom(cm.DeepCopy())
		cm.Labels["by-operator"] = "yes"
		g.Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("an-operator"))).To(Succeed())
	}

	render(t, ks, "main@sha1:o2", objects("two"))
	waitReady(t, ks, "main@sha1:o2")
	g.Eventually(func(g Gomega) {
		override := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "override"}, override)).To(Succeed())
		g.Expect(override.Data).To(HaveKeyWithValue("key", "two"))
		g.Expect(override.Labels).NotTo(HaveKey("by-kubectl"), "Override takes back what kubectl apply added")
		g.Expect(override.Annotations).NotTo(HaveKey("by-kubectl-ssa"))
		g.Expect(override.Annotations).NotTo(HaveKey("kubectl.kubernetes.io/last-applied-configuration"))
		g.Expect(override.Labels).To(HaveKeyWithValue("by-operator", "yes"), "another tool's field stays")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	merge := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "merge"}, merge)).To(Succeed())
	g.Expect(merge.Data).To(HaveKeyWithValue("key", "two"))
	g.Expect(merge.Labels).To(HaveKeyWithValue("by-kubectl", "yes"), "Merge leaves what others added")
	g.Expect(merge.Annotations).To(HaveKeyWithValue("by-kubectl-ssa", "yes"))
	g.Expect(merge.Labels).To(HaveKeyWithValue("by-operator", "yes"))
}

// TestHelmReleaseObjectOutOfDriftDetection: an object a chart renders with
// Flux's helm.toolkit.fluxcd.io/driftDetection: disabled is left as
// someone edited it while its sibling is corrected; a new render still
// applies it, as an upgrade does.
func TestHelmReleaseObjectOutOfDriftDetection(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled}
	})
	ns := hr.Namespace
	chart := func(v string) string {
		return annotatedConfigMap(ns, "tuned", `helm.toolkit.fluxcd.io/driftDetection: disabled`, v) + "---\n" +
			annotatedConfigMap(ns, "watched", `team: a`, v)
	}
	renderRelease(t, hr, "1.0.0", "", chart("one"))
	waitReleaseReady(t, hr, "1.0.0")

	editConfigMap(t, ctx, ns, "tuned", "edited")
	editConfigMap(t, ctx, ns, "watched", "edited")
	g.Eventually(func() string { return configMapKey(ctx, ns, "watched") }, 30*time.Second, 50*time.Millisecond).Should(Equal("one"))
	requestRelease(t, hr)
	g.Expect(configMapKey(ctx, ns, "tuned")).To(Equal("edited"), "driftDetection: disabled is not corrected")

	renderRelease(t, hr, "1.0.1", "", chart("two"))
	waitReleaseReady(t, hr, "1.0.1")
	g.Expect(configMapKey(ctx, ns, "tuned")).To(Equal("two"), "a new render is applied")
}

// TestAFluxFieldPlumbRefusesIsExplained: a GitRepository ported from Flux
// with a field Plumb's CRD lacks fails the sync (the API server refuses
// the field rather than dropping it), and the status says why Plumb has
// no such field, from api/fluxport, beside the server's own message.
func TestAFluxFieldPlumbRefusesIsExplained(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	repo := fmt.Sprintf("apiVersion: source.plumb.dev/v1\nkind: GitRepository\nmetadata:\n  name: ported\n  namespace: %s\n"+
		"spec:\n  interval: 5m\n  url: https://git.example.com/repo\n  serviceAccountName: workload\n", ks.Namespace)
	render(t, ks, "main@sha1:fa01", repo+"---\n"+configMaps(ks.Namespace, "beside"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("GitRepository/" + ks.Namespace + "/ported"))
	g.Expect(msg).To(ContainSubstring("spec.serviceAccountName: field not declared in schema"))
	g.Expect(msg).To(ContainSubstring("Flux's spec.serviceAccountName: Flux exchanges the ServiceAccount's token"))
	g.Expect(exists(ctx, g, &sourcev1.GitRepository{}, ks.Namespace, "ported")).To(BeFalse(), "nothing is created without the field")
}
