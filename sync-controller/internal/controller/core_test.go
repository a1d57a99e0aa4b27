package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
)

func configMaps(ns string, names ...string) string {
	var docs []string
	for _, n := range names {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: %s\n", n, ns, n))
	}
	return strings.Join(docs, "---\n")
}

func deployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: app
        image: registry.example/app:1.0
        resources:
          requests: {cpu: 500m, memory: 64Mi}
`, ns, name, replicas)
}

func TestApplyLabelsInventoryAndNoWritesOnResync(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:1111", configMaps(ks.Namespace, "a", "b")+"---\n"+deployment(ks.Namespace, "web", 1))
	got := waitReady(t, ks, "main@sha1:1111")

	g.Expect(got.Status.Inventory).NotTo(BeNil())
	g.Expect(got.Status.Inventory.Entries).To(ConsistOf(
		kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: ks.Namespace, Name: "a"},
		kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: ks.Namespace, Name: "b"},
		kustomizev1.InventoryEntry{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ks.Namespace, Name: "web"},
	))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "a"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, ks.Name))
	g.Expect(cm.Labels).To(HaveKeyWithValue(kustomizev1.NamespaceLabel, ks.Namespace))
	// The render side's status survived sync-controller's writes.
	g.Expect(got.Status.RenderedArtifact).NotTo(BeNil())
	g.Expect(conditions.IsTrue(got, kustomizev1.RenderedCondition)).To(BeTrue())

	// A resync with nothing changed writes nothing but the status.
	requests.Reset()
	requestReconcile(t, ks)
	writes := requests.WritesUnder("/namespaces/" + ks.Namespace + "/")
	for req := range writes {
		g.Expect(req).To(ContainSubstring("/kustomizations/app/status"), "unexpected write %s", req)
	}
}

// A new generation rendered to the same artifact is synced from the bytes
// kept at the first download: decoded again, not downloaded again, and
// applied whole (an empty decode would prune every object).
func TestANewGenerationOfTheSameArtifactIsNotDownloadedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	manifests := fleetApp(ks.Namespace)
	render(t, ks, "main@sha1:2222", manifests)
	first := waitReady(t, ks, "main@sha1:2222")
	path := artifactPath(ks, manifests)
	g.Expect(artifacts.downloads(path)).To(Equal(1))

	patch := client.MergeFrom(first.DeepCopy())
	first.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	g.Expect(env.Client.Patch(ctx, first, patch)).To(Succeed())
	g.Expect(first.Generation).To(BeNumerically(">", first.Status.ObservedGeneration))
	render(t, ks, "main@sha1:2222", manifests)
	second := waitReady(t, ks, "main@sha1:2222")

	g.Expect(second.Status.ObservedGeneration).To(Equal(first.Generation))
	g.Expect(second.Status.Inventory.Entries).To(HaveLen(4))
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Service{}, &corev1.ServiceAccount{}} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "app"}, obj)).To(Succeed())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(kustomizev1.NameLabel, ks.Name))
	}
	g.Expect(artifacts.downloads(path)).To(Equal(1), "the second generation downloaded the artifact again")
}

func TestForeignChangeIsRevertedAndReported(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:2222", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:2222")

	scale(t, ctx, ks.Namespace, "web", 3)

	// Reverted without waiting for the interval (1h): the watch sees it.
	g.Eventually(func() int32 { return replicas(ctx, ks.Namespace, "web") }, 30*time.Second, 50*time.Millisecond).Should(Equal(int32(1)))
	g.Eventually(func(g Gomega) {
		detected := subscription.withReason(kustomizev1.DriftDetectedReason)
		g.Expect(detected).NotTo(BeEmpty())
		changes := detected[len(detected)-1].Changes
		g.Expect(changes).To(ContainElement(And(
			HaveField("Object", "Deployment/"+ks.Namespace+"/web"),
			HaveField("Path", "spec.replicas"),
			HaveField("Before", "3"),
			HaveField("After", "1"),
		)))
		g.Expect(subscription.withReason(kustomizev1.DriftCorrectedReason)).NotTo(BeEmpty())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestIgnoredFieldIsNeitherReportedNorReverted(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}}}
	})
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:3333", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:3333")

	scale(t, ctx, ks.Namespace, "web", 3)
	requestReconcile(t, ks)
	requestReconcile(t, ks)
	g.Expect(replicas(ctx, ks.Namespace, "web")).To(Equal(int32(3)))
	g.Expect(subscription.withReason(kustomizev1.DriftDetectedReason)).To(BeEmpty())
}

func TestPrune(t *testing.T) {
	g := NewWithT(t)
	// Three of four objects leave the set: more than the prune guard lets
	// through by default (pruneguard_test.go tests the guard).
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.MaxPrunePercent = ptr.To[int32](100) })
	keep := configMaps(ks.Namespace, "keep")
	disabled := `apiVersion: v1
kind: ConfigMap
metadata:
  name: disabled
  namespace: ` + ks.Namespace + `
  annotations: {plumb.dev/prune: disabled}
`
	render(t, ks, "main@sha1:4444", keep+"---\n"+configMaps(ks.Namespace, "gone", "taken")+"---\n"+disabled)
	waitReady(t, ks, "main@sha1:4444")

	// A broken render keeps the last good artifact and deletes nothing.
	renderFailed(t, ks, "kustomize build failed: accumulating resources: missing.yaml")
	msg := waitNotReady(t, ks, kustomizev1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("missing.yaml"))
	for _, name := range []string{"keep", "gone", "taken", "disabled"} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: name}, &corev1.ConfigMap{})).To(Succeed(), name)
	}

	// While suspended, someone takes "taken" over (removes our labels) and
	// Git drops it: without our labels it is not ours to delete.
	setSuspend(t, ks, true)
	taken := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "taken"}, taken)).To(Succeed())
	delete(taken.Labels, kustomizev1.NameLabel)
	g.Expect(env.Client.Update(ctx, taken)).To(Succeed())
	setSuspend(t, ks, false)
	render(t, ks, "main@sha1:5555", keep)
	got := waitReady(t, ks, "main@sha1:5555")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "gone"}, &corev1.ConfigMap{}))
	}, 30*time.Second).Should(BeTrue(), "gone is pruned")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "taken"}, &corev1.ConfigMap{})).To(Succeed(), "an object without our labels is never deleted")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "disabled"}, &corev1.ConfigMap{})).To(Succeed(), "prune: disabled keeps it")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "keep"}, &corev1.ConfigMap{})).To(Succeed())
}

func TestDeletingTheKustomizationPrunesItsInventory(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:6666", configMaps(ks.Namespace, "a"))
	waitReady(t, ks, "main@sha1:6666")
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "a"}, &corev1.ConfigMap{}))
	}, 30*time.Second).Should(BeTrue())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{}))
	}, 30*time.Second).Should(BeTrue())

	// Without prune, deletion orphans the objects.
	ctx, orphaning := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Prune = false })
	render(t, orphaning, "main@sha1:6666", configMaps(orphaning.Namespace, "a"))
	waitReady(t, orphaning, "main@sha1:6666")
	g.Expect(env.Client.Delete(ctx, orphaning)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(orphaning), &kustomizev1.Kustomization{}))
	}, 30*time.Second).Should(BeTrue())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: orphaning.Namespace, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())
}

func immutableConfigMap(ns, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: %s\nimmutable: true\ndata:\n  key: %s\n", ns, value)
}

func TestImmutableFieldNeedsForce(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:7777", immutableConfigMap(ks.Namespace, "one"))
	waitReady(t, ks, "main@sha1:7777")

	render(t, ks, "main@sha1:8888", immutableConfigMap(ks.Namespace, "two"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + ks.Namespace + "/frozen"))
	g.Expect(msg).To(ContainSubstring("immutable"))
	g.Expect(msg).To(ContainSubstring("spec.force"))

	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Force = true
	// A merge patch: the controller writes the status meanwhile.
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	render(t, ks, "main@sha1:8888", immutableConfigMap(ks.Namespace, "two"))
	waitReady(t, ks, "main@sha1:8888")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "frozen"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("key", "two"))
}

func TestDependsOn(t *testing.T) {
	g := NewWithT(t)
	ctx, base := newKustomization(t, nil)
	app := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: base.Namespace},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: base.Spec.SourceRef, Interval: base.Spec.Interval, Prune: true,
			DependsOn: []meta.DependencyReference{{Name: base.Name}},
		},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	render(t, app, "main@sha1:9999", configMaps(base.Namespace, "dependent"))
	msg := waitNotReady(t, app, meta.DependencyNotReadyReason)
	g.Expect(msg).To(ContainSubstring(base.Namespace + "/" + base.Name))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: base.Namespace, Name: "dependent"}, &corev1.ConfigMap{}))).To(BeTrue())

	render(t, base, "main@sha1:9999", configMaps(base.Namespace, "base"))
	waitReady(t, base, "main@sha1:9999")
	waitReady(t, app, "main@sha1:9999")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: base.Namespace, Name: "dependent"}, &corev1.ConfigMap{})).To(Succeed())
}

// dependent is a Kustomization named name, labelled app/version: version,
// that depends on base as deps says, with a render of a ConfigMap of its
// name.
func dependent(t *testing.T, ctx context.Context, base *kustomizev1.Kustomization, name, version string, deps ...meta.DependencyReference) *kustomizev1.Kustomization {
	t.Helper()
	app := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: base.Namespace, Labels: map[string]string{"app/version": version}},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: base.Spec.SourceRef, Interval: base.Spec.Interval, Prune: true, DependsOn: deps,
		},
	}
	NewWithT(t).Expect(env.Client.Create(ctx, app)).To(Succeed())
	render(t, app, "main@sha1:e1", configMaps(base.Namespace, name))
	return app
}

// dependsOn[].readyExpr replaces the built-in readiness check with Flux's
// variables: Flux's lockstep example waits for the dependency to carry
// the dependent's version; an expression that ignores Ready lets a
// dependency that never became Ready through; one that does not compile
// stalls the dependent naming it.
func TestDependsOnReadyExpr(t *testing.T) {
	g := NewWithT(t)
	ctx, base := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Labels = map[string]string{"app/version": "v1"} })
	lockstep := dependent(t, ctx, base, "lockstep", "v2", meta.DependencyReference{Name: base.Name,
		ReadyExpr: "dep.metadata.labels['app/version'] == self.metadata.labels['app/version'] && " +
			"dep.status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True') && " +
			"dep.metadata.generation == dep.status.observedGeneration"})
	byName := dependent(t, ctx, base, "by-name", "v1", meta.DependencyReference{Name: base.Name, ReadyExpr: "dep.metadata.name == '" + base.Name + "'"})
	broken := dependent(t, ctx, base, "broken", "v1", meta.DependencyReference{Name: base.Name, ReadyExpr: "dep.metadata.name =="})

	// base is not Ready (nothing rendered): the built-in check would hold
	// by-name, its expression does not.
	waitReady(t, byName, "main@sha1:e1")
	g.Expect(conditions.IsReady(storedKustomization(ctx, g, base))).To(BeFalse())

	msg := waitNotReady(t, broken, meta.InvalidCELExpressionReason)
	g.Expect(msg).To(And(ContainSubstring(`dependsOn[0] (`+base.Name+`): readyExpr "dep.metadata.name =="`), ContainSubstring("does not compile")))
	g.Expect(conditions.IsTrue(storedKustomization(ctx, g, broken), meta.StalledCondition)).To(BeTrue())

	render(t, base, "main@sha1:e1", configMaps(base.Namespace, "base"))
	waitReady(t, base, "main@sha1:e1")
	msg = waitNotReady(t, lockstep, meta.DependencyNotReadyReason)
	g.Expect(msg).To(ContainSubstring(base.Namespace + "/" + base.Name + " is not ready according to its readyExpr"))
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, base.Namespace, "lockstep") }, 2*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "applied while the dependency has another version")

	current := storedKustomization(ctx, g, base)
	patch := client.MergeFrom(current.DeepCopy())
	current.Labels["app/version"] = "v2"
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	waitReady(t, lockstep, "main@sha1:e1")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, base.Namespace, "lockstep")).To(BeTrue())
}

func TestBadArtifactIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:aaaa", configMaps(ks.Namespace, "a"))
	waitReady(t, ks, "main@sha1:aaaa")

	// The served bytes do not match the digest in status.
	renderServing(t, ks, "main@sha1:bbbb", configMaps(ks.Namespace, "b"), []byte(configMaps(ks.Namespace, "forged")))
	msg := waitNotReady(t, ks, meta.ArtifactFailedReason)
	g.Expect(msg).To(ContainSubstring("refusing a tampered or partial artifact"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "a"}, &corev1.ConfigMap{})).To(Succeed(), "nothing pruned")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "forged"}, &corev1.ConfigMap{}))).To(BeTrue())
}

func TestMissingNamespaceIsAClearError(t *testing.T) {
	g := NewWithT(t)
	_, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:cccc", configMaps("no-such-namespace", "a"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("ConfigMap/no-such-namespace/a"))
	g.Expect(msg).To(ContainSubstring("no-such-namespace"))
}

func scale(t *testing.T, ctx context.Context, ns, name string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	NewWithT(t).Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(n)
	NewWithT(t).Expect(env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

func replicas(ctx context.Context, ns, name string) int32 {
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil || d.Spec.Replicas == nil {
		return -1
	}
	return *d.Spec.Replicas
}

func setSuspend(t *testing.T, ks *kustomizev1.Kustomization, suspend bool) {
	t.Helper()
	g := NewWithT(t)
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Suspend = suspend
	g.Expect(env.Client.Patch(context.Background(), current, patch)).To(Succeed())
}

func TestNoFalseDriftFromServerNormalization(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	subscription := subscribeEvents(t, ks)
	// Git writes the CPU request as 0.5 and leaves defaults out; the server
	// stores 500m and fills in defaults. The dry-run compare must see no
	// drift.
	manifest := strings.Replace(deployment(ks.Namespace, "web", 1), "cpu: 500m", "cpu: \"0.5\"", 1)
	render(t, ks, "main@sha1:n1", manifest)
	waitReady(t, ks, "main@sha1:n1")

	// A foreign write to a field Git does not declare makes the controller
	// check the object with a dry-run, which must find nothing to change.
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Labels["team"] = "payments"
	requests.Reset()
	g.Expect(env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-label"))).To(Succeed())
	g.Eventually(func() map[string]int { return requests.WritesUnder("/deployments/web") }, 10*time.Second, 50*time.Millisecond).
		Should(HaveKey(ContainSubstring("PATCH")), "the foreign write triggered a dry-run check")
	requestReconcile(t, ks)
	for req, n := range requests.WritesUnder("/deployments/web") {
		g.Expect(n).To(Equal(1), "only the dry-run check of %s, no apply", req)
	}
	g.Expect(subscription.withReason(kustomizev1.DriftDetectedReason)).To(BeEmpty())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, d)).To(Succeed())
	g.Expect(d.Labels).To(HaveKeyWithValue("team", "payments"), "fields Git does not declare are left alone")
}

func TestNamespaceAndCRDFromTheSameSetComeFirst(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	suffix := strings.TrimPrefix(ks.Namespace, "sync-")
	group := "widgets" + suffix + ".example.com"
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`, group)
	widget := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: big\n  namespace: team-%s\nspec:\n  size: 3\n", group, suffix)
	namespace := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-%s\n", suffix)
	// Listed in the worst order: the custom resource first.
	render(t, ks, "main@sha1:c1", widget+"---\n"+configMaps("team-"+suffix, "settings")+"---\n"+crd+"---\n"+namespace)
	got := waitReady(t, ks, "main@sha1:c1")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(4))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "team-" + suffix, Name: "settings"}, &corev1.ConfigMap{})).To(Succeed())
}

func TestHealthChecksWaitOnObjectsOutsideTheSet(t *testing.T) {
	g := NewWithT(t)
	_, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		ks.Spec.HealthChecks = []kustomizev1.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "external"}}
	})
	render(t, ks, "main@sha1:hc", configMaps(ks.Namespace, "a"))
	msg := waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("Deployment/" + ks.Namespace + "/external is Missing"))
}

func TestFinalizersOfBothControllersCoexist(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	// render-controller adds its own finalizer the same way, at the same time.
	g.Expect(reconcile.SetFinalizer(ctx, env.Client, ks, "plumb-render", "render.plumb.dev/finalizer", true)).To(Succeed())
	render(t, ks, "main@sha1:fin", configMaps(ks.Namespace, "a"))
	got := waitReady(t, ks, "main@sha1:fin")
	g.Expect(got.Finalizers).To(ConsistOf(Finalizer, "render.plumb.dev/finalizer"))

	// Removing one leaves the other.
	g.Expect(reconcile.SetFinalizer(ctx, env.Client, got, "plumb-render", "render.plumb.dev/finalizer", false)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Finalizers).To(ConsistOf(Finalizer))
}
