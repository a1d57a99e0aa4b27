package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/release/common"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/sync-controller/internal/helmstorage"
)

// chartTestPod is a test Pod as `helm template` prints one: run to
// completion, with a weight and a delete policy.
func chartTestPod(ns, name, weight, policy string) string {
	ann := fmt.Sprintf(`helm.sh/hook: test, helm.sh/hook-weight: %q`, weight)
	if policy != "" {
		ann += fmt.Sprintf(`, helm.sh/hook-delete-policy: %q`, policy)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations: {%s}
spec:
  restartPolicy: Never
  containers:
  - name: test
    image: registry.example/busybox:1.0
`, name, ns, ann)
}

// endPod writes a Pod's terminal phase as the kubelet would (envtest runs
// none): Succeeded, or Failed with the container's exit.
func endPod(t *testing.T, ctx context.Context, ns, name string, succeeded bool) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodSucceeded
		exit := int32(0)
		if !succeeded {
			pod.Status.Phase, exit = corev1.PodFailed, 1
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "test", Image: "registry.example/busybox:1.0",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}}}
		return env.Client.Status().Update(ctx, pod)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func podExists(ctx context.Context, g Gomega, ns, name string) bool {
	return exists(ctx, g, &corev1.Pod{}, ns, name)
}

// testPhases are status.history[0].testHooks as name → phase.
func testPhases(hr *helmv2.HelmRelease) map[string]string {
	if len(hr.Status.History) == 0 || hr.Status.History[0].TestHooks == nil {
		return nil
	}
	out := map[string]string{}
	for name, h := range *hr.Status.History[0].TestHooks {
		out[name] = h.Phase
	}
	return out
}

func withTests(test helmv2.Test) func(*helmv2.HelmRelease) {
	return func(hr *helmv2.HelmRelease) { hr.Spec.Test = &test }
}

func TestChartTestsRunInHelmsOrderAfterTheRelease(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, withTests(helmv2.Test{Enable: true}))
	ns := hr.Namespace
	sub := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
		chartTestPod(ns, "b-second", "0", "hook-succeeded"),
		chartTestPod(ns, "z-first", "-5", ""),
		chartTestPod(ns, "a-third", "5", ""),
		configMaps(ns, "settings"),
	}, "---\n"))

	// Weight first (-5 before 0 before 5), whatever the names; one at a
	// time, each once the one before it succeeded; only after the
	// release was deployed.
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "z-first") }, 30*time.Second).Should(BeTrue())
	got := getRelease(g, hr)
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}), "the tests run after the release")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeTrue())
	g.Consistently(func(g Gomega) bool { return podExists(ctx, g, ns, "b-second") }, time.Second, 100*time.Millisecond).Should(BeFalse())
	g.Expect(conditions.IsReady(got)).To(BeFalse(), "not Ready while the tests run")
	endPod(t, ctx, ns, "z-first", true)
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "b-second") }, 30*time.Second).Should(BeTrue())
	g.Expect(podExists(ctx, g, ns, "a-third")).To(BeFalse())
	endPod(t, ctx, ns, "b-second", true)
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "a-third") }, 30*time.Second).Should(BeTrue())
	endPod(t, ctx, ns, "a-third", true)

	got = waitReleaseReady(t, hr, "1.0.0")
	g.Expect(testPhases(got)).To(Equal(map[string]string{"z-first": "Succeeded", "b-second": "Succeeded", "a-third": "Succeeded"}))
	for _, h := range *got.Status.History[0].TestHooks {
		g.Expect(h.LastStarted).NotTo(BeNil())
		g.Expect(h.LastCompleted).NotTo(BeNil())
		g.Expect(h.LastCompleted.Time).NotTo(BeTemporally("<", h.LastStarted.Time))
	}
	success := conditions.Get(got, helmv2.TestSuccessCondition)
	g.Expect(success).To(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", helmv2.TestSucceededReason)))
	g.Expect(success.Message).To(Equal(fmt.Sprintf("Helm test succeeded for release %s/app.v1 with chart app@1.0.0: 3 test hooks completed successfully", ns)))
	g.Expect(sub.withReason(helmv2.TestSucceededReason)).To(HaveLen(1))
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "b-second") }, 30*time.Second).Should(BeFalse(), "hook-succeeded")
	g.Expect(podExists(ctx, g, ns, "z-first")).To(BeTrue(), "before-hook-creation keeps it until the next run")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1), "tests are not in the inventory")

	// A resync of the tested release runs no test again.
	requestRelease(t, hr)
	g.Expect(sub.withReason(helmv2.TestSucceededReason)).To(HaveLen(1))

	// A new release is tested anew: the leftover of the last run is
	// replaced (before-hook-creation).
	old := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "z-first"}, old)).To(Succeed())
	renderRelease(t, hr, "1.0.1", "", strings.Join([]string{chartTestPod(ns, "z-first", "-5", ""), configMaps(ns, "settings")}, "---\n"))
	g.Eventually(func(g Gomega) types.UID {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "z-first"}, pod); err != nil {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading the test pod: %v", err)
			return ""
		}
		return pod.UID
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(Or(Equal(old.UID), BeEmpty()))
	endPod(t, ctx, ns, "z-first", true)
	got = waitReleaseReady(t, hr, "1.0.1")
	g.Expect(testPhases(got)).To(Equal(map[string]string{"z-first": "Succeeded"}))
	g.Expect(got.Status.History[1].TestHooks).NotTo(BeNil(), "the last release keeps its results")
}

func TestAFailedChartTestFailsTheReleaseAndStopsTheTests(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignoreFailures=%v", ignore), func(t *testing.T) {
			g := NewWithT(t)
			ctx, hr := newHelmRelease(t, withTests(helmv2.Test{Enable: true, IgnoreFailures: ignore}))
			ns := hr.Namespace
			sub := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
			renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
				chartTestPod(ns, "connection", "0", "hook-failed"),
				chartTestPod(ns, "later", "1", ""),
				configMaps(ns, "settings"),
			}, "---\n"))
			g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "connection") }, 30*time.Second).Should(BeTrue())
			endPod(t, ctx, ns, "connection", false)

			var got *helmv2.HelmRelease
			g.Eventually(func(g Gomega) {
				got = getRelease(g, hr)
				g.Expect(conditions.Get(got, helmv2.TestSuccessCondition)).To(And(Not(BeNil()),
					HaveField("Status", metav1.ConditionFalse), HaveField("Reason", helmv2.TestFailedReason)))
				g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(conditions.Get(got, meta.ReadyCondition).Reason).NotTo(Equal(meta.ProgressingReason))
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
			g.Expect(testPhases(got)).To(Equal(map[string]string{"connection": "Failed", "later": ""}),
				"the tests after a failed one do not run")
			g.Expect(podExists(ctx, g, ns, "later")).To(BeFalse())
			g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "connection") }, 30*time.Second).Should(BeFalse(), "hook-failed")
			g.Expect(conditions.Get(got, helmv2.TestSuccessCondition).Message).To(And(
				HavePrefix(fmt.Sprintf("Helm test failed for release %s/app.v1 with chart app@1.0.0: test connection: ", ns)),
				ContainSubstring("Degraded")))
			g.Expect(got.FailedByTests()).To(Equal(!ignore))
			g.Eventually(func() []*events.Event { return sub.withReason(helmv2.TestFailedReason) }, 30*time.Second).Should(HaveLen(1))
			g.Expect(sub.withReason(helmv2.TestFailedReason)[0].Severity).To(Equal(events.SeverityError))

			ready := conditions.Get(got, meta.ReadyCondition)
			if ignore {
				g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}), "an ignored failure leaves the release deployed")
				g.Expect(conditions.IsTrue(got, helmv2.ReleasedCondition)).To(BeTrue())
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "ignoreFailures: Ready: %s", ready.Message)
				return
			}
			// A failed test fails the install, as in Flux: counted, and
			// (no retry, no remediateLastFailure) held, not tested again.
			g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:failed"}))
			g.Expect(got.Status.InstallFailures).To(BeEquivalentTo(1))
			g.Expect(conditions.Get(got, helmv2.ReleasedCondition)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", helmv2.InstallFailedReason)))
			g.Expect(ready).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", helmv2.TestFailedReason)))
			g.Eventually(func(g Gomega) {
				got = getRelease(g, hr)
				g.Expect(conditions.Get(got, meta.StalledCondition)).To(HaveField("Reason", meta.RetriesExceededReason))
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
			g.Expect(podExists(ctx, g, ns, "connection")).To(BeFalse(), "not run again")
			g.Expect(sub.withReason(helmv2.TestFailedReason)).To(HaveLen(1))
		})
	}
}

func TestChartTestFiltersSelectByName(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, withTests(helmv2.Test{Enable: true, Filters: &[]helmv2.Filter{
		{Name: "slow", Exclude: true},
	}}))
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
		chartTestPod(ns, "fast", "0", ""), chartTestPod(ns, "slow", "0", ""), configMaps(ns, "settings"),
	}, "---\n"))
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "fast") }, 30*time.Second).Should(BeTrue())
	endPod(t, ctx, ns, "fast", true)
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(testPhases(got)).To(Equal(map[string]string{"fast": "Succeeded"}), "excluded")
	g.Expect(podExists(ctx, g, ns, "slow")).To(BeFalse())

	// Including one runs only that one; a chart without a selected test
	// is tested too, with no test hooks.
	patchRelease(t, hr, func(hr *helmv2.HelmRelease) {
		hr.Spec.Test.Filters = &[]helmv2.Filter{{Name: "none-of-them"}}
	})
	renderRelease(t, hr, "1.0.1", "", strings.Join([]string{
		chartTestPod(ns, "fast", "0", ""), chartTestPod(ns, "slow", "0", ""), configMaps(ns, "settings", "more"),
	}, "---\n"))
	got = waitReleaseReady(t, hr, "1.0.1")
	g.Expect(got.Status.History[0].TestHooks).NotTo(BeNil())
	g.Expect(testPhases(got)).To(BeEmpty())
	g.Expect(conditions.Get(got, helmv2.TestSuccessCondition).Message).To(HaveSuffix(": no test hooks"))
}

func TestChartTestsDoNotRunUnlessEnabled(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{chartTestPod(ns, "connection", "0", ""), configMaps(ns, "settings")}, "---\n"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(podExists(ctx, g, ns, "connection")).To(BeFalse())
	g.Expect(got.Status.History[0].TestHooks).To(BeNil())
	g.Expect(conditions.Has(got, helmv2.TestSuccessCondition)).To(BeFalse())

	// Enabling them tests the deployed release, as Flux does.
	patchRelease(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Test = &helmv2.Test{Enable: true} })
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{chartTestPod(ns, "connection", "0", ""), configMaps(ns, "settings")}, "---\n"))
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "connection") }, 30*time.Second).Should(BeTrue())
	endPod(t, ctx, ns, "connection", true)
	g.Eventually(func(g Gomega) map[string]string { return testPhases(getRelease(g, hr)) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal(map[string]string{"connection": "Succeeded"}))
	g.Expect(releases(getRelease(g, hr))).To(Equal([]string{"1:1.0.0:deployed"}), "the same release")
}

// patchRelease changes the spec of a HelmRelease.
func patchRelease(t *testing.T, hr *helmv2.HelmRelease, mutate func(*helmv2.HelmRelease)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &helmv2.HelmRelease{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), cur); err != nil {
			return err
		}
		mutate(cur)
		return env.Client.Update(context.Background(), cur)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestAFailedChartTestRollsTheUpgradeBack: an upgrade whose chart test
// fails is remediated as a failed upgrade (Flux's semantics): with
// remediateLastFailure it is rolled back to the release before it, whose
// tests then run again and pass.
func TestAFailedChartTestRollsTheUpgradeBack(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Test = &helmv2.Test{Enable: true}
		hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{RemediateLastFailure: ptr.To(true)}}
	})
	ns := hr.Namespace
	chart := func(version, v string) testhelm.Chart {
		return testhelm.Chart{Name: "app", Version: version, Files: testhelm.Files{
			"templates/objects.yaml": chartTestPod(ns, "check-"+v, "0", "") + "---\n" + configMaps(ns, "shared", v),
		}}
	}
	renderChart(t, hr, chart("1.0.0", "v1"), nil)
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "check-v1") }, 30*time.Second).Should(BeTrue())
	endPod(t, ctx, ns, "check-v1", true)
	waitReleaseReady(t, hr, "1.0.0")

	renderChart(t, hr, chart("2.0.0", "v2"), nil)
	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "check-v2") }, 30*time.Second).Should(BeTrue())
	endPod(t, ctx, ns, "check-v2", false)
	// The rollback is a new release of the first one's render.
	g.Eventually(func(g Gomega) []string {
		return releases(getRelease(g, hr))
	}, 60*time.Second, 200*time.Millisecond).Should(Equal([]string{"3:1.0.0:deployed", "2:2.0.0:failed", "1:1.0.0:superseded"}))
	got := getRelease(g, hr)
	g.Expect(got.Status.History[0].Description).To(Equal("Rollback to 1"))
	g.Expect(got.Status.History[1].Description).To(ContainSubstring("test check-v2"))
	g.Expect(got.Status.UpgradeFailures).To(BeEquivalentTo(1))
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(HaveField("Reason", helmv2.RollbackSucceededReason))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "v1")).To(BeTrue())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "v2")).To(BeFalse(), "the rollback pruned what the upgrade added")

	// Helm's storage records the rollback as `helm rollback` does: a new
	// revision, a copy of revision 1, deployed; revision 2, whose test
	// failed, superseded (Helm leaves a release whose test failed
	// deployed until the next one).
	storage := helmstorage.Storage{Client: env.Client, Namespace: ns, Release: "app"}
	g.Eventually(func(g Gomega) []helmstorage.Entry { return records(g, ns, "app") }, 10*time.Second).Should(ConsistOf(
		helmstorage.Entry{Version: 1, Status: common.StatusSuperseded},
		helmstorage.Entry{Version: 2, Status: common.StatusSuperseded},
		helmstorage.Entry{Version: 3, Status: common.StatusDeployed}))
	v3, err := storage.Read(ctx, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v3.Info.Description).To(Equal("Rollback to 1"))
	g.Expect(v3.Manifest).To(ContainSubstring("name: v1"))
	g.Expect(v3.Manifest).NotTo(ContainSubstring("name: v2"))
}
