package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// newHelmRelease creates a HelmRelease in a fresh namespace.
func newHelmRelease(t *testing.T, mutate func(*helmv2.HelmRelease)) (context.Context, *helmv2.HelmRelease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "helm")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "app"},
			Interval: metav1.Duration{Duration: time.Hour},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	}
	if mutate != nil {
		mutate(hr)
	}
	NewWithT(t).Expect(env.Client.Create(ctx, hr)).To(Succeed())
	return ctx, hr
}

// renderRelease does render-controller's part for a HelmRelease: it serves
// the rendered chart and points status.renderedArtifact at it — revision
// the chart version, metadata the chart and the values digest — with
// Rendered=True for the current generation.
func renderRelease(t *testing.T, hr *helmv2.HelmRelease, version, values, manifests string) {
	t.Helper()
	sum := sha256.Sum256([]byte(manifests))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	path := fmt.Sprintf("/helmrelease/%s/%s/%s.yaml", hr.Namespace, hr.Name, hex.EncodeToString(sum[:]))
	artifacts.mu.Lock()
	artifacts.files[path] = []byte(manifests)
	artifacts.mu.Unlock()

	current := &helmv2.HelmRelease{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), current)).To(Succeed())
	status := map[string]any{
		"renderedArtifact": map[string]any{
			"path": path, "url": artifacts.URL + path, "revision": version, "digest": digest,
			"size": int64(len(manifests)), "lastUpdateTime": metav1.Now().UTC().Format(time.RFC3339),
			"metadata": map[string]any{
				helmv2.ArtifactChartNameKey: "app", helmv2.ArtifactChartVersionKey: version,
				helmv2.ArtifactConfigDigestKey: valuesDigest(values),
			},
		},
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason,
			"message": "rendered " + version, "observedGeneration": current.Generation,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}},
	}
	NewWithT(t).Expect(reconcile.ApplyStatus(context.Background(), env.Client, current, "plumb-render", status)).To(Succeed())
}

func valuesDigest(values string) string {
	sum := sha256.Sum256([]byte(values))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func getRelease(g Gomega, hr *helmv2.HelmRelease) *helmv2.HelmRelease {
	got := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), got)).To(Succeed())
	return got
}

// waitReleaseReady waits for Ready=True at the current generation with the
// chart version applied.
func waitReleaseReady(t *testing.T, hr *helmv2.HelmRelease, version string) *helmv2.HelmRelease {
	t.Helper()
	var got *helmv2.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s", ready.Message)
		g.Expect(got.Status.LastAppliedRevision).To(Equal(version))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return got
}

// helmHook is a Job annotated as `helm template` prints a hook.
func helmHook(ns, name, hook, weight, policy string) string {
	ann := fmt.Sprintf(`helm.sh/hook: %q, helm.sh/hook-weight: %q`, hook, weight)
	if policy != "" {
		ann += fmt.Sprintf(`, helm.sh/hook-delete-policy: %q`, policy)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
  annotations: {%s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: hook
        image: registry.example/hook:1.0
`, name, ns, ann)
}

func helmTestPod(ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: test-connection
  namespace: %s
  annotations: {helm.sh/hook: test}
spec:
  containers:
  - name: wget
    image: registry.example/busybox:1.0
`, ns)
}

func jobExists(ctx context.Context, g Gomega, ns, name string) bool {
	return exists(ctx, g, &batchv1.Job{}, ns, name)
}

// releases summarizes the history as version:chartVersion:status.
func releases(hr *helmv2.HelmRelease) []string {
	var out []string
	for _, h := range hr.Status.History {
		out = append(out, fmt.Sprintf("%d:%s:%s", h.Version, h.ChartVersion, h.Status))
	}
	return out
}

func TestHelmReleaseInstallUpgradeAndFailedUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	hooks := func(cms ...string) string {
		return strings.Join([]string{
			helmHook(ns, "create-db", "pre-install", "-1", "hook-succeeded"),
			helmHook(ns, "seed", "pre-install", "1", ""),
			helmHook(ns, "migrate", "pre-upgrade", "0", "before-hook-creation,hook-failed"),
			helmTestPod(ns),
			configMaps(ns, cms...),
		}, "---\n")
	}

	// The install: the pre-install hooks run in weight order, the
	// pre-upgrade one and the test hook never.
	renderRelease(t, hr, "1.0.0", "replicas: 1", hooks("settings"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "create-db") }, 30*time.Second).Should(BeTrue())
	g.Consistently(func(g Gomega) bool { return jobExists(ctx, g, ns, "seed") }, time.Second, 100*time.Millisecond).
		Should(BeFalse(), "weight 1 waits for weight -1")
	finishJob(t, ctx, ns, "create-db", true)
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "seed") }, 30*time.Second).Should(BeTrue())
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "create-db") }, 30*time.Second).Should(BeFalse(), "hook-succeeded")
	finishJob(t, ctx, ns, "seed", true)
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(jobExists(ctx, g, ns, "migrate")).To(BeFalse(), "pre-upgrade does not run on the install")
	g.Expect(exists(ctx, g, &corev1.Pod{}, ns, "test-connection")).To(BeFalse(), "a sync runs no test hook")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeTrue())
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1), "hooks are not in the inventory")
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))
	g.Expect(got.Status.History[0]).To(And(HaveField("Name", "app"), HaveField("Namespace", ns), HaveField("ChartName", "app"),
		HaveField("ConfigDigest", valuesDigest("replicas: 1")), HaveField("Digest", got.Status.RenderedArtifact.Digest)))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("1.0.0"))
	g.Expect(got.Status.LastAttemptedConfigDigest).To(Equal(valuesDigest("replicas: 1")))
	released := conditions.Get(got, helmv2.ReleasedCondition)
	g.Expect(released).To(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", helmv2.InstallSucceededReason)))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal("Released app@1.0.0 as " + ns + "/app v1"))
	seed := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seed"}, seed)).To(Succeed(), "before-hook-creation keeps it")
	g.Expect(seed.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))

	// An upgrade: only the pre-upgrade hook runs.
	renderRelease(t, hr, "1.1.0", "replicas: 2", hooks("settings", "extra"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "migrate", true)
	got = waitReleaseReady(t, hr, "1.1.0")
	g.Expect(jobExists(ctx, g, ns, "create-db")).To(BeFalse(), "pre-install does not run on an upgrade")
	again := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seed"}, again)).To(Succeed())
	g.Expect(again.UID).To(Equal(seed.UID), "the install's hook is not run again")
	g.Expect(releases(got)).To(Equal([]string{"2:1.1.0:deployed", "1:1.0.0:superseded"}))
	g.Expect(got.Status.History[0].FirstDeployed).To(Equal(got.Status.History[1].FirstDeployed), "an upgrade carries the install's firstDeployed")
	g.Expect(got.Status.History[0].LastDeployed.Before(&got.Status.History[1].LastDeployed)).To(BeFalse())
	g.Expect(conditions.Get(got, helmv2.ReleasedCondition)).To(HaveField("Reason", helmv2.UpgradeSucceededReason))
	migrate := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, migrate)).To(Succeed())

	// A failed upgrade: a new failed release; the one before stays deployed.
	renderRelease(t, hr, "1.2.0", "replicas: 2", hooks("settings", "extra", "more"))
	g.Eventually(func(g Gomega) types.UID {
		job := &batchv1.Job{}
		if !exists(ctx, g, job, ns, "migrate") {
			return migrate.UID
		}
		return job.UID
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(Equal(migrate.UID), "before-hook-creation: the upgrade's hook is created anew")
	finishJob(t, ctx, ns, "migrate", false)
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		released := conditions.Get(got, helmv2.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(released.Reason).To(Equal(helmv2.UpgradeFailedReason))
		g.Expect(released.Message).To(ContainSubstring("migration exited 1"))
		g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(releases(got)).To(Equal([]string{"3:1.2.0:failed", "2:1.1.0:deployed", "1:1.0.0:superseded"}))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("1.1.0"))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("1.2.0"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "migrate") }, 30*time.Second).Should(BeFalse(), "hook-failed")

	// Its retry is the same release. (The request is handled once the
	// sync is over: the hook runs first.)
	current := getRelease(g, hr)
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().Format(time.RFC3339Nano)}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "migrate", true)
	got = waitReleaseReady(t, hr, "1.2.0")
	g.Expect(releases(got)).To(Equal([]string{"3:1.2.0:deployed", "2:1.1.0:superseded", "1:1.0.0:superseded"}))
}

// requestRelease sets the requestedAt annotation and waits until the
// controller handled it.
func requestRelease(t *testing.T, hr *helmv2.HelmRelease) {
	t.Helper()
	g := NewWithT(t)
	token := time.Now().Format(time.RFC3339Nano)
	current := getRelease(g, hr)
	patch := client.MergeFrom(current.DeepCopy())
	if current.Annotations == nil {
		current.Annotations = map[string]string{}
	}
	current.Annotations[meta.ReconcileRequestAnnotation] = token
	g.Expect(env.Client.Patch(context.Background(), current, patch)).To(Succeed())
	g.Eventually(func(g Gomega) string { return getRelease(g, hr).Status.LastHandledReconcileAt }, time.Minute, 50*time.Millisecond).Should(Equal(token))
}

// crd is a CustomResourceDefinition as a chart's crds/ folder holds it,
// rendered under the CRD policy Create (plumb.dev/ssa: IfNotPresent,
// plumb.dev/prune: disabled), with a description that tells versions apart.
func crd(plural, description string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.helm.example.com
  annotations: {plumb.dev/ssa: IfNotPresent, plumb.dev/prune: disabled}
spec:
  group: helm.example.com
  scope: Namespaced
  names: {plural: %[1]s, singular: %[1]s, kind: %[1]s, listKind: %[1]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: %[2]q
        x-kubernetes-preserve-unknown-fields: true
`, plural, description)
}

// crdObject is an empty CustomResourceDefinition to read into (the test
// scheme has no apiextensions types).
func crdObject(name string) *unstructured.Unstructured {
	c := &unstructured.Unstructured{}
	c.SetAPIVersion("apiextensions.k8s.io/v1")
	c.SetKind("CustomResourceDefinition")
	c.SetName(name)
	return c
}

func crdDescription(ctx context.Context, g Gomega, name string) string {
	c := crdObject(name)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	versions, _, _ := unstructured.NestedSlice(c.Object, "spec", "versions")
	g.Expect(versions).NotTo(BeEmpty())
	d, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "description")
	return d
}

func keptConfigMap(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations: {helm.sh/resource-policy: keep}\ndata:\n  key: kept\n", name, ns)
}

func TestHelmReleasePrunesKeepsCRDsIfNotPresentAndUninstalls(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	ours, theirs := "widgets"+ns[len(ns)-5:], "gadgets"+ns[len(ns)-5:]
	// A CRD that exists already, not ours: IfNotPresent leaves it alone.
	existing := &unstructured.Unstructured{}
	decodeInto(t, crd(theirs, "installed by hand"), &existing.Object)
	existing.SetAnnotations(nil)
	g.Expect(env.Client.Create(ctx, existing)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), existing) })
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crdObject(ours+".helm.example.com")) })

	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
		crd(ours, "chart 1.0.0"), crd(theirs, "chart 1.0.0"), configMaps(ns, "stays", "leaves"),
		keptConfigMap(ns, "kept"), keptConfigMap(ns, "leaves-kept"),
	}, "---\n"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(6))
	g.Expect(crdDescription(ctx, g, ours+".helm.example.com")).To(Equal("chart 1.0.0"), "created when missing")
	g.Expect(crdDescription(ctx, g, theirs+".helm.example.com")).To(Equal("installed by hand"), "an existing CRD is not changed")

	// The next chart version: a changed CRD, and two objects gone.
	renderRelease(t, hr, "2.0.0", "", strings.Join([]string{crd(ours, "chart 2.0.0"), configMaps(ns, "stays"), keptConfigMap(ns, "kept")}, "---\n"))
	got = waitReleaseReady(t, hr, "2.0.0")
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "leaves") }, 30*time.Second).Should(BeFalse(), "pruned: it left the chart")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "leaves-kept")).To(BeTrue(), "helm.sh/resource-policy: keep")
	g.Expect(crdDescription(ctx, g, ours+".helm.example.com")).To(Equal("chart 1.0.0"), "IfNotPresent never updates")
	g.Expect(crdDescription(ctx, g, theirs+".helm.example.com")).To(Equal("installed by hand"), "prune disabled")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(3))

	// Uninstall: everything of the inventory goes, except what opts out.
	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &helmv2.HelmRelease{}, ns, hr.Name) }, 30*time.Second).Should(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "stays")).To(BeFalse(), "uninstalled")
	g.Expect(exists(ctx, g, crdObject(ours+".helm.example.com"), "", ours+".helm.example.com")).To(BeTrue(), "Helm never deletes crds/ CRDs")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "kept")).To(BeTrue(), "helm.sh/resource-policy: keep")
}

func TestHelmReleaseDriftDetectionModes(t *testing.T) {
	for _, tc := range []struct {
		mode             string
		reverted, report bool
	}{
		{helmv2.DriftDetectionEnabled, true, false},
		{helmv2.DriftDetectionWarn, false, true},
		{helmv2.DriftDetectionDisabled, false, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			g := NewWithT(t)
			ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
				hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: tc.mode}
			})
			sub := subscribeKind(t, helmv2.HelmReleaseKind, hr.Namespace, hr.Name)
			renderRelease(t, hr, "1.0.0", "", configMaps(hr.Namespace, "settings"))
			waitReleaseReady(t, hr, "1.0.0")

			editConfigMap(t, ctx, hr.Namespace, "settings", "edited")
			if tc.reverted {
				g.Eventually(func() string { return configMapKey(ctx, hr.Namespace, "settings") }, 30*time.Second, 50*time.Millisecond).Should(Equal("settings"))
				g.Eventually(func() []*events.Event { return sub.withReason(kustomizev1.DriftCorrectedReason) }, 30*time.Second).ShouldNot(BeEmpty())
				return
			}
			if tc.report {
				g.Eventually(func(g Gomega) {
					drifted := conditions.Get(getRelease(g, hr), kustomizev1.DriftedCondition)
					g.Expect(drifted).NotTo(BeNil())
					g.Expect(drifted.Message).To(ContainSubstring("ConfigMap/" + hr.Namespace + "/settings:data.key"))
				}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
			} else {
				requestRelease(t, hr)
				g.Expect(conditions.Has(getRelease(g, hr), kustomizev1.DriftedCondition)).To(BeFalse())
				g.Expect(sub.withReason(kustomizev1.DriftDetectedReason)).To(BeEmpty(), "disabled reports nothing")
			}
			g.Expect(configMapKey(ctx, hr.Namespace, "settings")).To(Equal("edited"), "not reverted")

			// A new render is applied, correcting the drift with it.
			renderRelease(t, hr, "1.0.1", "", configMaps(hr.Namespace, "settings", "more"))
			waitReleaseReady(t, hr, "1.0.1")
			g.Expect(exists(ctx, g, &corev1.ConfigMap{}, hr.Namespace, "more")).To(BeTrue())
		})
	}
}

func editConfigMap(t *testing.T, ctx context.Context, ns, name, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	NewWithT(t).Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["key"] = value
	NewWithT(t).Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

func configMapKey(ctx context.Context, ns, name string) string {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return "<" + err.Error() + ">"
	}
	return cm.Data["key"]
}

func TestKustomizationAndHelmReleaseOfOneNameDoNotInterfere(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: hr.Name, Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour}, Prune: true, AllowEmpty: true,
		},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	hrEvents := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	ksEvents := subscribeKind(t, kustomizev1.KustomizationKind, ns, ks.Name)

	renderRelease(t, hr, "1.0.0", "", configMaps(ns, "from-chart"))
	render(t, ks, "main@sha1:k1", configMaps(ns, "from-git"))
	waitReleaseReady(t, hr, "1.0.0")
	waitReady(t, ks, "main@sha1:k1")
	fromChart := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-chart"}, fromChart)).To(Succeed())
	g.Expect(fromChart.Labels).To(HaveKeyWithValue(helmv2.NameLabel, hr.Name))
	g.Expect(fromChart.Labels).NotTo(HaveKey(kustomizev1.NameLabel))

	// A foreign write to the release's object wakes the release, not the
	// Kustomization.
	editConfigMap(t, ctx, ns, "from-chart", "edited")
	g.Eventually(func() string { return configMapKey(ctx, ns, "from-chart") }, 30*time.Second, 50*time.Millisecond).Should(Equal("from-chart"))
	g.Eventually(func() []*events.Event { return hrEvents.withReason(kustomizev1.DriftCorrectedReason) }, 30*time.Second).ShouldNot(BeEmpty())
	g.Expect(ksEvents.withReason(kustomizev1.DriftCorrectedReason)).To(BeEmpty())

	// The Kustomization's prune and deletion leave the release's objects.
	render(t, ks, "main@sha1:k2", "")
	waitReady(t, ks, "main@sha1:k2")
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "from-git") }, 30*time.Second).Should(BeFalse())
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 30*time.Second).Should(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "from-chart")).To(BeTrue())
	got := getRelease(g, hr)
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(conditions.IsReady(got)).To(BeTrue())
}

// decodeInto reads a YAML manifest into a typed object.
func decodeInto(t *testing.T, manifest string, obj any) {
	t.Helper()
	NewWithT(t).Expect(yaml.Unmarshal([]byte(manifest), obj)).To(Succeed())
}

// subscribeKind collects the events NATS carries for one object of a kind.
func subscribeKind(t *testing.T, kind, ns, name string) *eventSubscription {
	t.Helper()
	nc, err := nats.Connect(env.NATSURL)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	s := &eventSubscription{conn: nc}
	s.sub, err = nc.Subscribe(events.Subject(kind, ns, name), func(m *nats.Msg) {
		e, err := events.Decode(m.Data)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.events = append(s.events, e)
		s.mu.Unlock()
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(nc.Close)
	return s
}

func TestHelmReleaseDependsOnImpersonatesAndSuspends(t *testing.T) {
	g := NewWithT(t)
	ctx, db := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Name = "db" })
	ns := db.Namespace
	tenantServiceAccount(t, ctx, ns, "deployer")
	web := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:           &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "web"},
			Interval:           metav1.Duration{Duration: time.Hour},
			DependsOn:          []meta.DependencyReference{{Name: "db"}},
			ServiceAccountName: "deployer",
		},
	}
	g.Expect(env.Client.Create(ctx, web)).To(Succeed())

	// dependsOn: web waits for the HelmRelease db.
	renderRelease(t, web, "1.0.0", "", configMaps(ns, "web"))
	g.Eventually(func(g Gomega) {
		ready := conditions.Get(getRelease(g, web), meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(meta.DependencyNotReadyReason))
		g.Expect(ready.Message).To(ContainSubstring("dependency " + ns + "/db"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "web")).To(BeFalse())
	renderRelease(t, db, "2.0.0", "", configMaps(ns, "db"))
	waitReleaseReady(t, db, "2.0.0")
	waitReleaseReady(t, web, "1.0.0")

	// serviceAccountName: what the ServiceAccount may not write is refused.
	renderRelease(t, web, "1.1.0", "", configMaps(ns, "web")+"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: "+ns+"\n")
	g.Eventually(func(g Gomega) {
		got := getRelease(g, web)
		g.Expect(conditions.GetMessage(got, meta.ReadyCondition)).To(ContainSubstring(
			fmt.Sprintf("Secret/%s/token: forbidden: ServiceAccount %s/deployer may not patch secrets", ns, ns)))
		g.Expect(conditions.Get(got, helmv2.ReleasedCondition)).To(HaveField("Reason", helmv2.UpgradeFailedReason))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(exists(ctx, g, &corev1.Secret{}, ns, "token")).To(BeFalse())

	// suspend: a new render is not applied.
	current := getRelease(g, db)
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Suspend = true
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	renderRelease(t, db, "2.1.0", "", configMaps(ns, "db", "db-more"))
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "db-more") }, 2*time.Second, 100*time.Millisecond).Should(BeFalse())
	g.Expect(getRelease(g, db).Status.LastAppliedRevision).To(Equal("2.0.0"))
}

// A HelmRelease's dependsOn[].readyExpr replaces the built-in check, as
// helm-controller's does: a dependency that never became Ready is enough
// for an expression that does not ask for Ready.
func TestHelmReleaseDependsOnReadyExpr(t *testing.T) {
	g := NewWithT(t)
	ctx, db := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Name = "db" })
	ns := db.Namespace
	web := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:  &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "web"},
			Interval:  metav1.Duration{Duration: time.Hour},
			DependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.metadata.name == 'db' && self.metadata.name == 'web'"}},
		},
	}
	g.Expect(env.Client.Create(ctx, web)).To(Succeed())
	renderRelease(t, web, "1.0.0", "", configMaps(ns, "web"))
	waitReleaseReady(t, web, "1.0.0")
	g.Expect(conditions.IsReady(getRelease(g, db))).To(BeFalse())
}

func TestHelmReleaseTimeoutBoundsHooksAndFailsTheInstall(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second} })
	renderRelease(t, hr, "1.0.0", "", helmHook(hr.Namespace, "never-done", "pre-install", "0", "")+"---\n"+configMaps(hr.Namespace, "app"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, hr.Namespace, "never-done") }, 30*time.Second).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		got := getRelease(g, hr)
		released := conditions.Get(got, helmv2.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Reason).To(Equal(helmv2.InstallFailedReason))
		g.Expect(released.Message).To(ContainSubstring("timed out waiting for health: Job/" + hr.Namespace + "/never-done"))
		g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:failed"}))
		g.Expect(conditions.Get(got, meta.ReadyCondition)).To(HaveField("Reason", kustomizev1.SyncFailedReason))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, hr.Namespace, "app")).To(BeFalse(), "the Sync phase never ran")
}
