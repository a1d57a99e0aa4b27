package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
)

// webRelease is a chart's render: the Deployment web running image and the
// ConfigMaps named, plus the extra documents.
func webRelease(ns, image string, cms []string, extra ...string) string {
	d := strings.Replace(deployment(ns, "web", 1), "registry.example/app:1.0", image, 1)
	return strings.Join(append([]string{d, configMaps(ns, cms...)}, extra...), "---\n")
}

// rollOut plays kube-controller-manager and the kubelet for the Deployment
// web until the test ends: a rollout of an image good says is pullable
// becomes available; any other never does.
func rollOut(t *testing.T, ns string, good func(image string) bool) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil ||
				d.Status.ObservedGeneration == d.Generation || !good(d.Spec.Template.Spec.Containers[0].Image) {
				continue
			}
			n := *d.Spec.Replicas
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
			}
			_ = env.Client.Status().Update(ctx, d)
		}
	}()
}

func webImage(ctx context.Context, g Gomega, ns string) string {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	return d.Spec.Template.Spec.Containers[0].Image
}

// finishHookEachTime finishes the hook Job name, successfully, each time
// it is created, until the test ends (a hook-succeeded hook goes once
// done, so each creation is a new run).
func finishHookEachTime(t *testing.T, ns, name string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			j := &batchv1.Job{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j); err != nil || j.Status.CompletionTime != nil {
				continue
			}
			now := metav1.Now()
			j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			}
			_ = env.Client.Status().Update(ctx, j)
		}
	}()
}

// TestHelmReleaseFailedUpgradeIsRolledBack: an upgrade into a Deployment
// that never becomes ready fails on its health check; with
// upgrade.remediation.retries 1 it is rolled back (the first release's
// objects applied again, with its pre-rollback hook, and what the upgrade
// added pruned), tried once more, rolled back again, and then held: the
// failed render is not applied again until a new one comes, which starts
// the counters anew.
func TestHelmReleaseFailedUpgradeIsRolledBack(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		// Only the upgrade is meant to time out: an install under
		// spec.timeout that short fails on a loaded machine.
		hr.Spec.Upgrade = &helmv2.Upgrade{
			ActionSwitches: helmv2.ActionSwitches{Timeout: &metav1.Duration{Duration: 2 * time.Second}},
			Remediation:    &helmv2.UpgradeRemediation{Retries: 1},
		}
		hr.Spec.Rollback = &helmv2.Rollback{Timeout: &metav1.Duration{Duration: 30 * time.Second}}
	})
	ns := hr.Namespace
	rollOut(t, ns, func(image string) bool { return image != "registry.example/app:2.0" })
	finishHookEachTime(t, ns, "before-rollback")
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, "app")
	rollbackHook := helmHook(ns, "before-rollback", "pre-rollback", "0", "hook-succeeded")

	renderRelease(t, hr, "1.0.0", "tag: 1.0", webRelease(ns, "registry.example/app:1.0", []string{"settings"}, rollbackHook))
	installed := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(jobExists(ctx, g, ns, "before-rollback")).To(BeFalse(), "a rollback hook does not run on the install")
	v1 := installed.Status.RenderedArtifact.Digest

	renderRelease(t, hr, "2.0.0", "tag: 2.0", webRelease(ns, "registry.example/app:2.0", []string{"settings", "extra"}, rollbackHook))
	var got *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		g.Expect(conditions.Get(got, meta.StalledCondition)).To(HaveField("Reason", meta.RetriesExceededReason))
		g.Expect(releases(got)).To(Equal([]string{"5:1.0.0:deployed", "4:2.0.0:failed", "3:1.0.0:superseded", "2:2.0.0:failed", "1:1.0.0:superseded"}))
	}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(got.Status.History[0].Digest).To(Equal(v1), "the rollback applied the first release's render")
	g.Expect(got.Status.History[0].Description).To(Equal("Rollback to 3"))
	g.Expect(got.Status.History[1].Description).To(HavePrefix(`Upgrade "app" failed: timed out waiting for health: Deployment/` + ns + "/web"))
	g.Expect(got.Status.History[4].Description).To(Equal("Install complete"))
	g.Expect(got.Status.UpgradeFailures).To(BeEquivalentTo(2))
	g.Expect(got.Status.InstallFailures).To(BeZero())
	g.Expect(got.Status.Failures).To(BeEquivalentTo(2))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionUpgrade))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("2.0.0"))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("1.0.0"))
	g.Expect(got.Status.LastAttemptedReleaseActionDuration).NotTo(BeNil())
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", helmv2.RollbackSucceededReason)))
	g.Expect(conditions.Get(got, helmv2.ReleasedCondition)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", helmv2.UpgradeFailedReason)))
	ready := conditions.Get(got, meta.ReadyCondition)
	g.Expect(ready).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", helmv2.RollbackSucceededReason)))
	g.Expect(ready.Message).To(And(ContainSubstring("rolled back to app@1.0.0"), ContainSubstring("no retry left")))
	g.Expect(webImage(ctx, g, ns)).To(Equal("registry.example/app:1.0"))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "extra")).To(BeFalse(), "the rollback pruned what the upgrade added")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeTrue())
	g.Expect(events.withReason(helmv2.RollbackSucceededReason)).To(HaveLen(2))

	// Held: the failed render is not applied again.
	g.Consistently(func(g Gomega) string { return webImage(ctx, g, ns) }, 3*time.Second, 200*time.Millisecond).
		Should(Equal("registry.example/app:1.0"))
	g.Expect(releases(getRelease(g, hr))).To(HaveLen(5))

	// A new render is a new attempt: counters from 0, Remediated gone.
	renderRelease(t, hr, "2.0.1", "tag: 1.0", webRelease(ns, "registry.example/app:1.0", []string{"settings", "extra"}, rollbackHook))
	got = waitReleaseReady(t, hr, "2.0.1")
	g.Expect(got.Status.UpgradeFailures).To(BeZero())
	g.Expect(got.Status.Failures).To(BeZero())
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil())
	g.Expect(releases(got)[0]).To(Equal("6:2.0.1:deployed"))
}

// TestHelmReleaseRetryOnFailureRetriesWithoutRollback: under
// upgrade.strategy RetryOnFailure a failed upgrade is synced again every
// retryInterval and never rolled back; it succeeds once its Deployment can
// become ready.
func TestHelmReleaseRetryOnFailureRetriesWithoutRollback(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		// Only the upgrade is meant to time out: the install under a
		// one-second spec.timeout failed on a loaded machine (CI).
		hr.Spec.Upgrade = &helmv2.Upgrade{
			ActionSwitches: helmv2.ActionSwitches{Timeout: &metav1.Duration{Duration: time.Second}},
			Strategy:       &helmv2.Strategy{Name: helmv2.RetryOnFailure, RetryInterval: &metav1.Duration{Duration: time.Second}},
			Remediation:    &helmv2.UpgradeRemediation{Retries: 3},
		}
	})
	ns := hr.Namespace
	pullable := make(chan struct{})
	rollOut(t, ns, func(image string) bool {
		select {
		case <-pullable:
			return true
		default:
			return image != "registry.example/app:2.0"
		}
	})
	renderRelease(t, hr, "1.0.0", "tag: 1.0", webRelease(ns, "registry.example/app:1.0", []string{"settings"}))
	waitReleaseReady(t, hr, "1.0.0")

	renderRelease(t, hr, "2.0.0", "tag: 2.0", webRelease(ns, "registry.example/app:2.0", []string{"settings", "extra"}))
	var got *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		g.Expect(got.Status.UpgradeFailures).To(BeNumerically(">=", 3), "retried past remediation.retries: RetryOnFailure ignores it")
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(releases(got)).To(Equal([]string{"2:2.0.0:failed", "1:1.0.0:deployed"}), "no rollback, and a retry is the same release")
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil())
	g.Expect(conditions.Get(got, meta.StalledCondition)).To(BeNil())
	g.Expect(webImage(ctx, g, ns)).To(Equal("registry.example/app:2.0"))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "extra")).To(BeTrue())

	close(pullable)
	got = waitReleaseReady(t, hr, "2.0.0")
	g.Expect(releases(got)).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}))
	g.Expect(conditions.Get(got, helmv2.ReleasedCondition)).To(HaveField("Reason", helmv2.UpgradeSucceededReason))
}

// TestHelmReleaseFailedInstallIsUninstalled: an install whose Deployment
// never becomes ready, with install.remediation retries 1 and
// remediateLastFailure, is uninstalled (its pre-delete hook run, its
// objects deleted), installed again, and uninstalled again; with
// uninstall.keepHistory the history stays, marked uninstalled. Nothing
// more is applied until a new attempt.
func TestHelmReleaseFailedInstallIsUninstalled(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		// The install is meant to time out, not the uninstall's hooks.
		hr.Spec.Install = &helmv2.Install{
			ActionSwitches: helmv2.ActionSwitches{Timeout: &metav1.Duration{Duration: 2 * time.Second}},
			Remediation:    &helmv2.InstallRemediation{Retries: 1, RemediateLastFailure: ptr.To(true)},
		}
		hr.Spec.Uninstall = &helmv2.Uninstall{KeepHistory: true}
	})
	ns := hr.Namespace
	finishHookEachTime(t, ns, "cleanup")
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, "app")
	renderRelease(t, hr, "1.0.0", "tag: 2.0", webRelease(ns, "registry.example/app:2.0", []string{"settings"},
		helmHook(ns, "cleanup", "pre-delete", "0", "hook-succeeded")))

	var got *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		g.Expect(conditions.Get(got, meta.StalledCondition)).To(HaveField("Reason", meta.RetriesExceededReason))
		g.Expect(got.Status.InstallFailures).To(BeEquivalentTo(2))
	}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", helmv2.UninstallSucceededReason)))
	g.Expect(conditions.Get(got, meta.ReadyCondition)).To(HaveField("Reason", helmv2.UninstallSucceededReason))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionInstall))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:uninstalled"}), "keepHistory; the second install was version 1 again, as after helm uninstall")
	g.Expect(got.Status.History[0].Description).To(Equal("Uninstallation complete"))
	g.Expect(got.Status.Inventory).To(BeNil())
	g.Expect(exists(ctx, g, &appsv1.Deployment{}, ns, "web")).To(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeFalse())
	g.Expect(events.withReason(helmv2.UninstallSucceededReason)).To(HaveLen(2))
	g.Expect(len(events.withReason("HookStarted"))).To(BeNumerically(">=", 2), "the pre-delete hook ran on each uninstall")

	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "settings") }, 3*time.Second, 200*time.Millisecond).
		Should(BeFalse(), "held: not installed again")
}

// TestHelmReleaseUninstallOptionsOnDeletion: deleting a HelmRelease runs
// no delete hook under uninstall.disableHooks, deletes its objects with
// uninstall.deletionPropagation (foreground: the API server keeps the
// Deployment, with the foregroundDeletion finalizer, for a garbage
// collector envtest does not run), and waits for them at most
// uninstall.timeout.
func TestHelmReleaseUninstallOptionsOnDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Uninstall = &helmv2.Uninstall{DisableHooks: true, DeletionPropagation: "foreground", Timeout: &metav1.Duration{Duration: 2 * time.Second}}
	})
	ns := hr.Namespace
	rollOut(t, ns, func(string) bool { return true })
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, "app")
	renderRelease(t, hr, "1.0.0", "", webRelease(ns, "registry.example/app:1.0", []string{"settings"},
		helmHook(ns, "cleanup", "pre-delete", "0", "")))
	waitReleaseReady(t, hr, "1.0.0")

	g.Expect(env.Client.Delete(ctx, getRelease(g, hr))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &helmv2.HelmRelease{}, ns, "app") }, 60*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "let go after uninstall.timeout")
	g.Expect(jobExists(ctx, g, ns, "cleanup")).To(BeFalse(), "disableHooks")
	// Every object deleted in the foreground waits for the garbage
	// collector, which envtest does not run.
	d, cm := &appsv1.Deployment{}, &corev1.ConfigMap{}
	for _, o := range []client.Object{d, cm} {
		name := "web"
		if o == cm {
			name = "settings"
		}
		g.Expect(exists(ctx, g, o, ns, name)).To(BeTrue())
		g.Expect(o.GetDeletionTimestamp()).NotTo(BeNil(), name)
		g.Expect(o.GetFinalizers()).To(ContainElement(metav1.FinalizerDeleteDependents), "%s deleted in the foreground", name)
	}
	g.Expect(events.withReason("TerminationTimeout")).NotTo(BeEmpty())
	g.Expect(events.withReason("TerminationTimeout")[0].Message).To(ContainSubstring(fmt.Sprintf("after uninstall.timeout (%s)", 2*time.Second)))
	for _, o := range []client.Object{d, cm} {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetFinalizers(nil)
		g.Expect(env.Client.Patch(ctx, o, patch)).To(Succeed())
	}
}

// TestRetryIntervalOnlyWithRetryOnFailure: the CRD refuses
// strategy.retryInterval with RemediateOnFailure, as Flux's does.
func TestRetryIntervalOnlyWithRetryOnFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "helm")
	g.Expect(err).NotTo(HaveOccurred())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "app"},
			Interval: metav1.Duration{Duration: time.Hour},
			Upgrade: &helmv2.Upgrade{Strategy: &helmv2.Strategy{Name: helmv2.RemediateOnFailure,
				RetryInterval: &metav1.Duration{Duration: time.Minute}}},
		},
	}
	err = env.Client.Create(ctx, hr)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("retryInterval can only be set with RetryOnFailure"))
}

// TestReleaseFailedEndsTheOperationFailed: the chart tests' seam ends the
// sync operation as a failed one, once, so that recordRelease records a
// failed release.
func TestReleaseFailedEndsTheOperationFailed(t *testing.T) {
	g := NewWithT(t)
	var recorded []bool
	s := &syncRun{}
	s.op.made, s.op.synced = true, true
	s.op.finish = func(_ context.Context, s *syncRun) { recorded = append(recorded, s.op.synced) }
	err := s.releaseFailed(context.Background(), "TestFailed", errors.New("test hook app-test failed"))
	g.Expect(err).To(MatchError(ContainSubstring("app-test failed")))
	g.Expect(recorded).To(Equal([]bool{false}))
	g.Expect(s.op.outcome()).To(Equal("TestFailed"))
	_ = s.releaseFailed(context.Background(), "TestFailed", errors.New("again"))
	g.Expect(recorded).To(HaveLen(1), "an operation ends once")
}
