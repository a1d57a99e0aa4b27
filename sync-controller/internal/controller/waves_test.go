package controller

import (
	"context"
	"fmt"
	"sort"
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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
)

func waveConfigMap(ns, name string, wave int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
  annotations: {plumb.dev/sync-wave: "%d"}
data: {wave: "%d"}
`, name, ns, wave, wave)
}

func hookJob(ns, name, phase, policy string) string {
	policyLine := ""
	if policy != "" {
		policyLine = ", plumb.dev/hook-delete-policy: " + policy
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
  annotations: {plumb.dev/hook: %s%s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example/migrate:1.0
        command: [migrate]
`, name, ns, phase, policyLine)
}

// exists says whether the object is there, and is false only when the API
// server answers NotFound: any other error fails g, so that an assertion
// that an object is absent holds only when it is, never because the read
// failed.
func exists(ctx context.Context, g Gomega, obj client.Object, ns, name string) bool {
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred(), "reading %T %s/%s", obj, ns, name)
	return true
}

// markDeploymentAvailable writes the status kube-controller-manager would
// write once the rollout finished (envtest runs no controller manager).
func markDeploymentAvailable(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
		}
		return env.Client.Status().Update(ctx, d)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// finishJob writes a Job's terminal status as the job controller would.
func finishJob(t *testing.T, ctx context.Context, ns, name string, succeeded bool) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		job := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
			return err
		}
		now := metav1.Now()
		job.Status.StartTime = &now
		if succeeded {
			job.Status.Succeeded = 1
			job.Status.CompletionTime = &now
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			}
		} else {
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "migration exited 1", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "migration exited 1", LastTransitionTime: now, LastProbeTime: now},
			}
		}
		return env.Client.Status().Update(ctx, job)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func syncProgress(ctx context.Context, ks *kustomizev1.Kustomization) *kustomizev1.SyncProgress {
	got := &kustomizev1.Kustomization{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got); err != nil {
		return nil
	}
	return got.Status.Sync
}

func TestWaveWaitsForTheHealthOfTheWaveBefore(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:w1", deployment(ns, "db", 1)+"---\n"+waveConfigMap(ns, "after-db", 1)+"---\n"+waveConfigMap(ns, "before-db", -1))

	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &appsv1.Deployment{}, ns, "db") }, 30*time.Second).Should(BeTrue())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "before-db")).To(BeTrue(), "wave -1 ran before wave 0")
	g.Eventually(func() *kustomizev1.SyncProgress { return syncProgress(ctx, ks) }, 10*time.Second).Should(And(
		Not(BeNil()), HaveField("Phase", kustomizev1.PhaseSync), HaveField("Wave", 0)))
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "after-db") }, 2*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "wave 1 must wait until wave 0 is healthy")

	markDeploymentAvailable(t, ctx, ns, "db")
	got := waitReady(t, ks, "main@sha1:w1")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "after-db")).To(BeTrue())
	g.Expect(got.Status.Sync.Phase).To(Equal(kustomizev1.PhaseSucceeded))
}

func TestPreSyncHookRunsFirstAndIsDeletedOnSuccess(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:h1", hookJob(ns, "migrate", "PreSync", "HookSucceeded")+"---\n"+configMaps(ns, "app"))

	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "app") }, 2*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "the Sync phase waits for the PreSync hook")
	g.Expect(syncProgress(ctx, ks)).To(HaveField("Phase", kustomizev1.PhasePreSync))

	finishJob(t, ctx, ns, "migrate", true)
	got := waitReady(t, ks, "main@sha1:h1")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "app")).To(BeTrue())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeFalse(), "HookSucceeded deletes the hook")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1), "hooks are not in the inventory")
}

func TestBeforeHookCreationRecreatesTheHookOnTheNextSync(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:b1", hookJob(ns, "migrate", "PreSync", "")+"---\n"+configMaps(ns, "app"))
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "migrate", true)
	waitReady(t, ks, "main@sha1:b1")
	first := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, first)).To(Succeed(), "the default policy keeps the hook until the next sync")

	// A resync of the same revision runs no hook again.
	requestReconcile(t, ks)
	again := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, again)).To(Succeed())
	g.Expect(again.UID).To(Equal(first.UID))

	render(t, ks, "main@sha1:b2", hookJob(ns, "migrate", "PreSync", "")+"---\n"+configMaps(ns, "app", "more"))
	g.Eventually(func() types.UID {
		job := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job); err != nil {
			return first.UID
		}
		return job.UID
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(Equal(first.UID))
	finishJob(t, ctx, ns, "migrate", true)
	waitReady(t, ks, "main@sha1:b2")
}

func TestFailedHookRunsSyncFailHooks(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	syncFail := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: rollback-notice
  namespace: %s
  annotations: {plumb.dev/hook: SyncFail}
data: {what: "the migration failed"}
`, ns)
	render(t, ks, "main@sha1:f1", hookJob(ns, "migrate", "PreSync", "HookFailed")+"---\n"+configMaps(ns, "app")+"---\n"+syncFail)
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "migrate", false)

	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("Job/" + ns + "/migrate"))
	g.Expect(msg).To(ContainSubstring("migration exited 1"))
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "rollback-notice") }, 30*time.Second).Should(BeTrue(), "SyncFail hook ran")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "app")).To(BeFalse(), "the Sync phase never ran")
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeFalse(), "HookFailed deletes the failed hook")
	g.Expect(syncProgress(ctx, ks)).To(HaveField("Phase", kustomizev1.PhaseFailed))
}

func TestReportModeLeavesDriftAndSetsDrifted(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.DriftPolicy = kustomizev1.DriftPolicyReport })
	render(t, ks, "main@sha1:r1", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:r1")

	scale(t, ctx, ks.Namespace, "web", 3)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		drifted := conditions.Get(got, kustomizev1.DriftedCondition)
		g.Expect(drifted).NotTo(BeNil())
		g.Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(drifted.Message).To(ContainSubstring("Deployment/" + ks.Namespace + "/web:spec.replicas"))
		g.Expect(got.Status.Drift).NotTo(BeNil())
		g.Expect(got.Status.Drift.Count).To(Equal(1))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(replicas(ctx, ks.Namespace, "web")).To(Equal(int32(3)), "Report mode does not revert")

	// Once the cluster matches Git again, Drifted goes away.
	scale(t, ctx, ks.Namespace, "web", 1)
	g.Eventually(func(g Gomega) bool {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		return conditions.Has(got, kustomizev1.DriftedCondition)
	}, 30*time.Second, 100*time.Millisecond).Should(BeFalse(), "Drifted goes away once the cluster matches Git")
}

func TestDeletedManagedObjectIsRecreated(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:d1", configMaps(ks.Namespace, "settings"))
	waitReady(t, ks, "main@sha1:d1")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "settings"}, cm)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func() bool {
		again := &corev1.ConfigMap{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "settings"}, again) == nil && again.UID != cm.UID
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
}

func TestWaitReportsUnhealthyObjects(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	render(t, ks, "main@sha1:u1", deployment(ks.Namespace, "web", 2))
	msg := waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("Deployment/" + ks.Namespace + "/web"))
	g.Expect(msg).To(ContainSubstring("Progressing"))

	// A Degraded object fails at once, naming why.
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, d)).To(Succeed())
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet web-abc has timed out progressing",
	}}}
	g.Expect(env.Client.Status().Update(ctx, d)).To(Succeed())
	requestReconcile(t, ks)
	msg = waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("Degraded"))
	g.Expect(msg).To(ContainSubstring("timed out progressing"))

	markDeploymentAvailable(t, ctx, ks.Namespace, "web")
	requestReconcile(t, ks)
	got := waitReady(t, ks, "main@sha1:u1")
	g.Expect(conditions.IsTrue(got, kustomizev1.HealthyCondition)).To(BeTrue())
}

func TestRestartMidPlanConverges(t *testing.T) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:x1", deployment(ns, "db", 1)+"---\n"+waveConfigMap(ns, "after-db", 1))
	g.Eventually(func() *kustomizev1.SyncProgress { return syncProgress(ctx, ks) }, 30*time.Second).Should(And(
		Not(BeNil()), HaveField("Phase", kustomizev1.PhaseSync), HaveField("Wave", 0)))
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &appsv1.Deployment{}, ns, "db") }, 30*time.Second).Should(BeTrue())

	// The controller dies while wave 0 is waiting; the rollout finishes
	// while it is away; a new controller resumes from the cluster's state.
	stopController()
	markDeploymentAvailable(t, ctx, ns, "db")
	stopController = startController()

	got := waitReady(t, ks, "main@sha1:x1")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "after-db")).To(BeTrue())
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(got.Status.Sync.Phase).To(Equal(kustomizev1.PhaseSucceeded))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missing"}, &corev1.ConfigMap{}))).To(BeTrue())
}

func TestHookInANamespaceTheSyncCreates(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := "hooked-" + strings.TrimPrefix(ks.Namespace, "sync-")
	namespace := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
	render(t, ks, "main@sha1:hn", namespace+"---\n"+hookJob(ns, "migrate", "PreSync", "HookSucceeded")+"---\n"+configMaps(ns, "app"))
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "migrate", true)
	got := waitReady(t, ks, "main@sha1:hn")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2), "the Namespace and the ConfigMap")
}

// TestAHookFailingOnEveryRetryIsTheSameNews: a PreSync hook that never
// completes times out on every retry (each retry creates it afresh), with
// a different count of failed pods each time. Every retry records SyncFailed again, and the events are
// equal but for their ids, times and volatile details (the counts), so
// notification-controller alerts the failure once per
// --rate-limit-interval (events.Fingerprint) rather than once per retry.
func TestAHookFailingOnEveryRetryIsTheSameNews(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		ks.Spec.RetryInterval = &metav1.Duration{Duration: time.Second}
	})
	ns := ks.Namespace
	sub := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:f2", hookJob(ns, "migrate", "PreSync", "")+"---\n"+configMaps(ns, "app"))
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "migrate") }, 30*time.Second).Should(BeTrue())

	// The job controller's count of failed pods grows while the sync is
	// retried. Every retry is a sync operation of its own, which deletes
	// the hook and creates it afresh (the job controller would start
	// counting again): the count is set on whichever Job is there until a
	// retry has reported it.
	for failed := int32(1); failed <= 3; failed++ {
		detail := fmt.Sprintf("job running: 1 active, 0 succeeded, %d failed", failed)
		g.Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job)).To(Succeed())
			if job.Status.Failed != failed {
				if job.Status.StartTime == nil {
					now := metav1.Now()
					job.Status.StartTime = &now
				}
				job.Status.Active, job.Status.Failed = 1, failed
				g.Expect(env.Client.Status().Update(ctx, job)).To(Succeed())
			}
			reported := false
			for _, e := range sub.withReason(kustomizev1.SyncFailedReason) {
				reported = reported || strings.HasSuffix(e.Metadata[events.VolatilePrefix+"health"], detail)
			}
			g.Expect(reported).To(BeTrue(), "a retry reported %q", detail)
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	}

	// A deadline that falls in a health read is a timeout too
	// (engine.WaitHealthy): every failure is the same news.
	failures := sub.withReason(kustomizev1.SyncFailedReason)
	details := map[string]bool{}
	for _, e := range failures {
		g.Expect(e.Message).To(Equal("PreSync phase, wave 0: timed out waiting for health: Job/" + ns + "/migrate is Progressing"))
		g.Expect(events.Fingerprint(e)).To(Equal(events.Fingerprint(failures[0])), "every retry reports the same news")
		details[e.Metadata[events.VolatilePrefix+"health"]] = true
	}
	g.Expect(details).To(HaveKey("timed out waiting for health: Job/"+ns+"/migrate is Progressing: job running: 1 active, 0 succeeded, 3 failed"),
		"where the job stood is in the volatile details")
	g.Expect(len(details)).To(BeNumerically(">", 1), "the details differ between retries, the fingerprint does not")
	g.Expect(waitNotReady(t, ks, kustomizev1.SyncFailedReason)).To(ContainSubstring("failed"), "the condition keeps the whole text")
}

// generateNameHook is a PreSync Job with only metadata.generateName, as
// Argo CD's examples write their hooks.
func generateNameHook(ns, generateName, policy string) string {
	return strings.Replace(hookJob(ns, generateName, "PreSync", policy), "  name: "+generateName, "  generateName: "+generateName, 1)
}

// hookJobs lists the Jobs of ns whose names start with prefix.
func hookJobs(ctx context.Context, g Gomega, ns, prefix string) []string {
	var list batchv1.JobList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, j := range list.Items {
		if strings.HasPrefix(j.Name, prefix) && j.DeletionTimestamp.IsZero() {
			names = append(names, j.Name)
		}
	}
	sort.Strings(names)
	return names
}

// A hook with only generateName is created fresh on each sync, as Argo
// CD's are: a new revision, and a retry of a failed sync, each create one
// of a new name, which stays when no delete policy says otherwise; with
// HookSucceeded it is deleted once it succeeded.
func TestGenerateNameHooksAreCreatedFreshOnEachSync(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.RetryInterval = &metav1.Duration{Duration: time.Second}
	})
	ns := ks.Namespace
	only := func(prefix string, n int) []string {
		var names []string
		g.Eventually(func(g Gomega) {
			names = hookJobs(ctx, g, ns, prefix)
			g.Expect(names).To(HaveLen(n))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		return names
	}

	render(t, ks, "main@sha1:g1", generateNameHook(ns, "migrate-", "")+"---\n"+configMaps(ns, "app"))
	first := only("migrate-", 1)
	g.Expect(first[0]).To(MatchRegexp(`^migrate-[0-9a-f]{8}$`))
	finishJob(t, ctx, ns, first[0], true)
	waitReady(t, ks, "main@sha1:g1")

	// A new revision: a second Job beside the first.
	render(t, ks, "main@sha1:g2", generateNameHook(ns, "migrate-", "")+"---\n"+configMaps(ns, "app", "more"))
	both := only("migrate-", 2)
	g.Expect(both).To(ContainElement(first[0]))
	second := both[0]
	if second == first[0] {
		second = both[1]
	}
	// It fails; the retry a second later creates a third, fresh one.
	finishJob(t, ctx, ns, second, false)
	waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	three := only("migrate-", 3)
	g.Expect(three).To(ContainElements(first[0], second))
	third := ""
	for _, n := range three {
		if n != first[0] && n != second {
			third = n
		}
	}
	finishJob(t, ctx, ns, third, true)
	waitReady(t, ks, "main@sha1:g2")

	// HookSucceeded: the hook goes once it succeeded.
	render(t, ks, "main@sha1:g3", generateNameHook(ns, "seed-", "HookSucceeded")+"---\n"+configMaps(ns, "app", "more"))
	seed := only("seed-", 1)
	finishJob(t, ctx, ns, seed[0], true)
	waitReady(t, ks, "main@sha1:g3")
	only("seed-", 0)
}
