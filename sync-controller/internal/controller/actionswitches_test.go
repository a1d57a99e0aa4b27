package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// regularJob is a Job that is no hook: an object of the release.
func regularJob(ns, name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: job
        image: registry.example/job:1.0
`, name, ns)
}

// waitReleaseFailed waits for Released=False with reason at the current
// generation and returns the HelmRelease.
func waitReleaseFailed(t *testing.T, hr *helmv2.HelmRelease, reason string) *helmv2.HelmRelease {
	t.Helper()
	var got *helmv2.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		released := conditions.Get(got, helmv2.ReleasedCondition)
		g.Expect(released).NotTo(BeNil())
		g.Expect(released.Status).To(Equal(metav1.ConditionFalse), "Released: %s", released.Message)
		g.Expect(released.Reason).To(Equal(reason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return got
}

func TestInstallCreateNamespaceCreatesTheReleaseNamespaceAndKeepsIt(t *testing.T) {
	g := NewWithT(t)
	var target string
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		target = hr.Namespace + "-target"
		hr.Spec.TargetNamespace = target
		hr.Spec.Install = &helmv2.Install{CreateNamespace: true}
	})
	renderRelease(t, hr, "1.0.0", "", configMaps(target, "settings"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, target, "settings")).To(BeTrue())
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: target}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))

	// An upgrade keeps it (it never leaves the render), and deleting the
	// HelmRelease leaves it, as Helm leaves the namespace it created.
	renderRelease(t, hr, "1.0.1", "", configMaps(target, "settings", "more"))
	waitReleaseReady(t, hr, "1.0.1")
	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond).Should(BeTrue())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, target, "settings") }, 30*time.Second).Should(BeFalse(), "the release is uninstalled")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: target}, ns)).To(Succeed())
	g.Expect(ns.DeletionTimestamp).To(BeNil(), "the namespace is not pruned")
}

func TestDisableHooksRunsNoHookOfThatAction(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{DisableHooks: true}}
	})
	ns := hr.Namespace
	manifests := func(cms ...string) string {
		return strings.Join([]string{
			helmHook(ns, "create-db", "pre-install,pre-upgrade", "0", ""),
			helmHook(ns, "notify", "post-install,post-upgrade", "0", ""),
			configMaps(ns, cms...),
		}, "---\n")
	}
	renderRelease(t, hr, "1.0.0", "", manifests("settings"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(jobExists(ctx, g, ns, "create-db")).To(BeFalse(), "install.disableHooks")
	g.Expect(jobExists(ctx, g, ns, "notify")).To(BeFalse(), "install.disableHooks")
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))

	// The upgrade's own switch is unset: its hooks run.
	renderRelease(t, hr, "1.0.1", "", manifests("settings", "more"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "create-db") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "create-db", true)
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "notify") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "notify", true)
	waitReleaseReady(t, hr, "1.0.1")
}

func TestDisableWaitAndDisableWaitForJobs(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{DisableWait: true}}
		hr.Spec.Upgrade = &helmv2.Upgrade{ActionSwitches: helmv2.ActionSwitches{DisableWaitForJobs: true}}
	})
	ns := hr.Namespace
	// A Deployment in a wave before a ConfigMap: disableWait waits
	// neither between waves nor at the end (envtest never makes it
	// available on its own).
	web := strings.Replace(deployment(ns, "web", 1), "metadata:\n", "metadata:\n  annotations: {plumb.dev/sync-wave: \"-1\"}\n", 1)
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{web, configMaps(ns, "settings")}, "---\n"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeTrue())
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	g.Expect(d.Status.AvailableReplicas).To(BeZero(), "Ready without waiting for it")
	g.Expect(conditions.Has(got, kustomizev1.HealthyCondition)).To(BeFalse(), "nothing was judged")

	// The upgrade waits (its disableWait is unset), for every object but
	// the Job: disableWaitForJobs.
	markDeploymentAvailable(t, ctx, ns, "web")
	renderRelease(t, hr, "1.0.1", "", strings.Join([]string{web, configMaps(ns, "settings"), regularJob(ns, "migrate")}, "---\n"))
	got = waitReleaseReady(t, hr, "1.0.1")
	g.Expect(conditions.IsTrue(got, kustomizev1.HealthyCondition)).To(BeTrue())
	job := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job)).To(Succeed())
	g.Expect(job.Status.Succeeded).To(BeZero(), "Ready without waiting for the Job")
}

func TestActionTimeoutBoundsTheSync(t *testing.T) {
	g := NewWithT(t)
	_, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
		hr.Spec.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{Timeout: &metav1.Duration{Duration: time.Second}}}
	})
	renderRelease(t, hr, "1.0.0", "", deployment(hr.Namespace, "web", 1))
	got := waitReleaseFailed(t, hr, helmv2.InstallFailedReason)
	ready := conditions.Get(got, meta.ReadyCondition)
	g.Expect(ready).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", kustomizev1.HealthCheckFailedReason)))
	g.Expect(ready.Message).To(ContainSubstring("Deployment/" + hr.Namespace + "/web"))
}

func TestUpgradeForceRecreatesAndCleanupOnFailDeletesWhatTheUpgradeCreated(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Upgrade = &helmv2.Upgrade{Force: true, CleanupOnFail: true,
			ActionSwitches: helmv2.ActionSwitches{Timeout: &metav1.Duration{Duration: 2 * time.Second}}}
	})
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "", immutableConfigMap(ns, "one"))
	waitReleaseReady(t, hr, "1.0.0")
	before := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frozen"}, before)).To(Succeed())

	// upgrade.force: the immutable ConfigMap is recreated.
	renderRelease(t, hr, "1.0.1", "", immutableConfigMap(ns, "two"))
	waitReleaseReady(t, hr, "1.0.1")
	after := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frozen"}, after)).To(Succeed())
	g.Expect(after.Data).To(HaveKeyWithValue("key", "two"))
	g.Expect(after.UID).NotTo(Equal(before.UID))

	// upgrade.cleanupOnFail: an upgrade whose Deployment never becomes
	// available fails; what it created goes, what was there stays.
	renderRelease(t, hr, "1.1.0", "", strings.Join([]string{immutableConfigMap(ns, "two"), configMaps(ns, "extra"), deployment(ns, "web", 1)}, "---\n"))
	got := waitReleaseFailed(t, hr, helmv2.UpgradeFailedReason)
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "extra") }, 30*time.Second).Should(BeFalse())
	g.Expect(exists(ctx, g, &appsv1.Deployment{}, ns, "web")).To(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "frozen")).To(BeTrue())
	var names []string
	for _, e := range got.Status.Inventory.Entries {
		names = append(names, e.Kind+"/"+e.Name)
	}
	g.Expect(names).To(ConsistOf("ConfigMap/frozen"))
	g.Expect(releases(got)).To(Equal([]string{"3:1.1.0:failed", "2:1.0.1:deployed", "1:1.0.0:superseded"}))
}

func TestDisableTakeOwnershipRefusesAnObjectThatIsNotTheReleases(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{DisableTakeOwnership: true}}
	})
	ns := hr.Namespace
	byHand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"key": "by hand"}}
	g.Expect(env.Client.Create(ctx, byHand)).To(Succeed())
	renderRelease(t, hr, "1.0.0", "", configMaps(ns, "settings", "more"))
	got := waitReleaseFailed(t, hr, helmv2.InstallFailedReason)
	g.Expect(conditions.Get(got, helmv2.ReleasedCondition).Message).To(ContainSubstring(
		"ConfigMap/" + ns + "/settings exists and is not this release's, and disableTakeOwnership is set"))
	g.Expect(configMapKey(ctx, ns, "settings")).To(Equal("by hand"), "not taken over")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "more")).To(BeFalse(), "nothing of the group is applied")

	// Without the switch the release takes it over, as Flux by default.
	patchRelease(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Install = nil })
	renderRelease(t, hr, "1.0.0", "", configMaps(ns, "settings", "more"))
	waitReleaseReady(t, hr, "1.0.0")
	g.Expect(configMapKey(ctx, ns, "settings")).To(Equal("settings"))
	owned := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, owned)).To(Succeed())
	g.Expect(owned.UID).To(Equal(byHand.UID), "taken over, not recreated")

	// Its own objects are the release's: an upgrade with the switch set
	// applies over them.
	patchRelease(t, hr, func(hr *helmv2.HelmRelease) {
		hr.Spec.Upgrade = &helmv2.Upgrade{ActionSwitches: helmv2.ActionSwitches{DisableTakeOwnership: true}}
	})
	renderRelease(t, hr, "1.0.1", "", configMaps(ns, "settings", "more", "third"))
	waitReleaseReady(t, hr, "1.0.1")
}
