package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// retryState is what a test reads of a Kustomization's retries.
type retryState struct {
	retry    *kustomizev1.RetryStatus
	revision string // of status.sync: the sync the series belongs to
	syncs    int64  // sync operations of the newest history entry
	ready    *metav1.Condition
	stalled  *metav1.Condition
}

func readRetry(g Gomega, ks *kustomizev1.Kustomization) retryState {
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
	st := retryState{retry: got.Status.Retry, ready: conditions.Get(got, meta.ReadyCondition), stalled: conditions.Get(got, meta.StalledCondition)}
	if got.Status.Sync != nil {
		st.revision = got.Status.Sync.Revision
	}
	if len(got.Status.History) > 0 {
		st.syncs = got.Status.History[0].TotalReconciliations
	}
	return st
}

// waitRetry waits until status.retry is at attempt, with a next retry due
// (pending) or none left, for the sync of revision, and returns the state.
func waitRetry(t *testing.T, ks *kustomizev1.Kustomization, revision string, attempt int64, pending bool) retryState {
	t.Helper()
	var st retryState
	NewWithT(t).Eventually(func(g Gomega) {
		st = readRetry(g, ks)
		g.Expect(st.revision).To(Equal(revision))
		g.Expect(st.retry).NotTo(BeNil())
		g.Expect(st.retry.Attempt).To(Equal(attempt))
		if pending {
			g.Expect(st.retry.NextAttemptAt).NotTo(BeNil())
		} else {
			g.Expect(st.retry.NextAttemptAt).To(BeNil())
		}
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	return st
}

// spec.retry retries a failed sync (here an apply into a namespace that
// does not exist yet) after its backoff, not after retryInterval, showing
// the attempt in status.retry and Ready; at the limit it stops, Stalled,
// until a change. A reconcile request starts a new series, so does a new
// revision, and a sync that succeeds ends it.
func TestRetryBacksOffUpToTheLimitThenWaitsForAChange(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		// Were retryInterval used, no retry would come within the test.
		ks.Spec.RetryInterval = &metav1.Duration{Duration: time.Hour}
		ks.Spec.Retry = &kustomizev1.RetryStrategy{Limit: 2, Backoff: &kustomizev1.RetryBackoff{
			Duration: &metav1.Duration{Duration: time.Second}, Factor: ptr.To[int64](2),
			MaxDuration: &metav1.Duration{Duration: 2 * time.Second},
		}}
	})
	later, other := ks.Namespace+"-later", ks.Namespace+"-other"

	render(t, ks, "main@sha1:r1", configMaps(later, "a"))
	st := waitRetry(t, ks, "main@sha1:r1", 1, true)
	g.Expect(st.ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(st.ready.Reason).To(Equal(kustomizev1.SyncFailedReason))
	g.Expect(st.ready.Message).To(ContainSubstring("ConfigMap/" + later + "/a"))
	g.Expect(st.ready.Message).To(ContainSubstring("(retry 1 of 2 at " + st.retry.NextAttemptAt.UTC().Format(time.RFC3339) + ")"))
	waitRetry(t, ks, "main@sha1:r1", 2, true)

	// The second retry fails too: the limit is reached.
	st = waitRetry(t, ks, "main@sha1:r1", 2, false)
	g.Expect(st.ready.Reason).To(Equal(kustomizev1.SyncFailedReason))
	g.Expect(st.ready.Message).To(ContainSubstring("ConfigMap/" + later + "/a"))
	g.Expect(st.ready.Message).To(ContainSubstring("retried 2 times"))
	g.Expect(st.stalled).NotTo(BeNil())
	g.Expect(st.stalled.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(st.stalled.Reason).To(Equal(meta.RetriesExceededReason))
	g.Expect(st.syncs).To(Equal(int64(3)), "the first sync and two retries")
	// No further sync: longer than the longest backoff.
	g.Consistently(func(g Gomega) {
		now := readRetry(g, ks)
		g.Expect(now.syncs).To(Equal(int64(3)))
		g.Expect(now.retry).To(Equal(st.retry))
	}, 4*time.Second, 200*time.Millisecond).Should(Succeed())

	// A reconcile request starts a new series.
	requestReconcile(t, ks)
	st = waitRetry(t, ks, "main@sha1:r1", 1, true)
	g.Expect(st.syncs).To(BeNumerically(">=", 4))
	g.Expect(st.stalled).To(BeNil(), "no longer stalled")
	waitRetry(t, ks, "main@sha1:r1", 2, true)

	// A new revision starts a new series too.
	render(t, ks, "main@sha1:r2", configMaps(other, "b"))
	st = waitRetry(t, ks, "main@sha1:r2", 1, true)
	g.Expect(st.ready.Message).To(ContainSubstring("ConfigMap/" + other + "/b"))

	// Once the namespace exists, the retry succeeds and ends the series.
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})).To(Succeed())
	waitReady(t, ks, "main@sha1:r2")
	g.Eventually(func(g Gomega) {
		g.Expect(readRetry(g, ks).retry).To(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, other, "b")).To(BeTrue())
}

// A health check that times out after a successful apply is a failed sync
// too: retried after the backoff, then stalled at the limit, while the
// Deployment's rollout that would make it pass is only seen after a
// reconcile request, whose sync succeeds and ends the series.
func TestRetryCountsHealthTimeouts(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.Timeout = &metav1.Duration{Duration: time.Second}
		ks.Spec.Retry = &kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{
			Duration: &metav1.Duration{Duration: time.Second}}}
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:h1", deployment(ns, "web", 1))
	st := waitRetry(t, ks, "main@sha1:h1", 1, true)
	g.Expect(st.ready.Reason).To(Equal(kustomizev1.HealthCheckFailedReason))
	g.Expect(st.ready.Message).To(ContainSubstring("Deployment/" + ns + "/web"))
	g.Expect(st.ready.Message).To(ContainSubstring("(retry 1 of 1 at "))

	st = waitRetry(t, ks, "main@sha1:h1", 1, false)
	g.Expect(st.ready.Reason).To(Equal(kustomizev1.HealthCheckFailedReason))
	g.Expect(st.ready.Message).To(ContainSubstring("retried once, spec.retry.limit"))
	g.Expect(st.stalled).NotTo(BeNil())
	g.Expect(st.stalled.Reason).To(Equal(meta.RetriesExceededReason))

	// The rollout finishes; the watch event it brings is held back by the
	// limit: Ready stays as it was.
	markDeploymentAvailable(t, ctx, ns, "web")
	g.Consistently(func(g Gomega) {
		now := readRetry(g, ks)
		g.Expect(now.ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(now.retry).To(Equal(st.retry))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	requestReconcile(t, ks)
	waitReady(t, ks, "main@sha1:h1")
	g.Eventually(func(g Gomega) {
		now := readRetry(g, ks)
		g.Expect(now.retry).To(BeNil())
		g.Expect(now.stalled).To(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// spec.retry is checked by the API server: the messages name the field.
func TestRetryIsValidatedAtAdmission(t *testing.T) {
	duration := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	tests := []struct {
		name    string
		retry   kustomizev1.RetryStrategy
		message string // "" for accepted
	}{
		{name: "Argo CD's defaults", retry: kustomizev1.RetryStrategy{Limit: 5}},
		{name: "retry without end", retry: kustomizev1.RetryStrategy{Limit: -1}},
		{name: "a constant delay", retry: kustomizev1.RetryStrategy{Limit: 3, Backoff: &kustomizev1.RetryBackoff{
			Duration: duration(time.Minute), Factor: ptr.To[int64](1), MaxDuration: duration(time.Minute)}}},
		{name: "a negative limit other than -1", retry: kustomizev1.RetryStrategy{Limit: -2},
			message: "spec.retry.limit must be -1 (retry without end), 0 (no retry) or a count of at most 10000"},
		{name: "a limit too large", retry: kustomizev1.RetryStrategy{Limit: 10001},
			message: "spec.retry.limit must be -1"},
		{name: "a factor below 1", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{Factor: ptr.To[int64](0)}},
			message: "spec.retry.backoff.factor must be an integer from 1 to 1000"},
		{name: "a zero duration", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{Duration: duration(0)}},
			message: "spec.retry.backoff.duration must be greater than zero"},
		{name: "a zero maxDuration", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{MaxDuration: duration(0)}},
			message: "spec.retry.backoff.maxDuration must be greater than zero"},
		{name: "a maxDuration shorter than the duration", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{
			Duration: duration(time.Minute), MaxDuration: duration(30 * time.Second)}},
			message: "spec.retry.backoff.maxDuration must not be shorter than spec.retry.backoff.duration"},
		{name: "a maxDuration shorter than the default duration", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{
			MaxDuration: duration(time.Second)}},
			message: "spec.retry.backoff.maxDuration must not be shorter than spec.retry.backoff.duration"},
		{name: "a duration longer than the default maxDuration", retry: kustomizev1.RetryStrategy{Limit: 1, Backoff: &kustomizev1.RetryBackoff{
			Duration: duration(5 * time.Minute)}},
			message: "spec.retry.backoff.maxDuration must not be shorter than spec.retry.backoff.duration"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "retry-admission")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Name: "app-" + string(rune('a'+i)), Namespace: ns},
				Spec: kustomizev1.KustomizationSpec{
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
					Interval:  metav1.Duration{Duration: time.Hour},
					Suspend:   true,
					Retry:     &tt.retry,
				},
			}
			err := env.Client.Create(ctx, ks)
			if tt.message == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused as invalid: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
		})
	}
}

// retries.next counts a failed attempt as Argo CD does: limit retries after
// the first sync (0: none, -1: without end), the delay of retry n being
// duration·factor^(n-1) at most maxDuration, due on a whole second; a new
// artifact, generation or reconcile request starts the count over.
func TestNextRetryCountsAttemptsAsArgoCD(t *testing.T) {
	now := time.Date(2026, 12, 1, 17, 0, 0, 400_000_000, time.UTC)
	at := func(d time.Duration) *metav1.Time {
		t := metav1.NewTime(now.Add(d).Truncate(time.Second).Add(time.Second))
		return &t
	}
	argo := func(limit int64) *kustomizev1.RetryStrategy { return &kustomizev1.RetryStrategy{Limit: limit} }
	tests := []struct {
		name      string
		policy    *kustomizev1.RetryStrategy
		prev      *kustomizev1.RetryStatus
		digest    string // of status.sync; "sha256:aa" is this run's
		requested bool
		want      kustomizev1.RetryStatus
		note      string
	}{
		{name: "limit 0 never retries", policy: argo(0),
			want: kustomizev1.RetryStatus{Attempt: 0}, note: "not retried: spec.retry.limit is 0; a new revision, a spec change or a reconcile request syncs again"},
		{name: "the first failure schedules retry 1 after the duration", policy: argo(5),
			want: kustomizev1.RetryStatus{Attempt: 1, NextAttemptAt: at(5 * time.Second)}, note: "retry 1 of 5 at 2026-12-01T17:00:06Z"},
		{name: "a failed retry schedules the next, factor times later", policy: argo(5), prev: &kustomizev1.RetryStatus{Attempt: 3},
			want: kustomizev1.RetryStatus{Attempt: 4, NextAttemptAt: at(40 * time.Second)}},
		{name: "the delay is capped at maxDuration", policy: argo(10), prev: &kustomizev1.RetryStatus{Attempt: 8},
			want: kustomizev1.RetryStatus{Attempt: 9, NextAttemptAt: at(3 * time.Minute)}},
		{name: "the last retry allowed failing ends the series", policy: argo(5), prev: &kustomizev1.RetryStatus{Attempt: 5},
			want: kustomizev1.RetryStatus{Attempt: 5}, note: "retried 5 times, spec.retry.limit; a new revision, a spec change or a reconcile request syncs again"},
		{name: "-1 retries without end", policy: argo(-1), prev: &kustomizev1.RetryStatus{Attempt: 100},
			want: kustomizev1.RetryStatus{Attempt: 101, NextAttemptAt: at(3 * time.Minute)}, note: "retry 101 at 2026-12-01T17:03:01Z"},
		{name: "a new artifact starts over", policy: argo(5), prev: &kustomizev1.RetryStatus{Attempt: 5}, digest: "sha256:bb",
			want: kustomizev1.RetryStatus{Attempt: 1, NextAttemptAt: at(5 * time.Second)}},
		{name: "a reconcile request starts over", policy: argo(5), prev: &kustomizev1.RetryStatus{Attempt: 5}, requested: true,
			want: kustomizev1.RetryStatus{Attempt: 1, NextAttemptAt: at(5 * time.Second)}},
		{name: "its own backoff", policy: &kustomizev1.RetryStrategy{Limit: 3, Backoff: &kustomizev1.RetryBackoff{
			Duration: &metav1.Duration{Duration: 1500 * time.Millisecond}, Factor: ptr.To[int64](3), MaxDuration: &metav1.Duration{Duration: time.Hour}}},
			prev: &kustomizev1.RetryStatus{Attempt: 2},
			want: kustomizev1.RetryStatus{Attempt: 3, NextAttemptAt: at(13500 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Generation: 2}}
			if tt.requested {
				ks.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
			}
			digest := tt.digest
			if digest == "" {
				digest = "sha256:aa"
			}
			s := &syncRun{obj: ks, app: kustomization{ks}, digest: "sha256:aa", spec: syncSpec{Retry: tt.policy},
				prev: syncStatus{Retry: tt.prev, Sync: &kustomizev1.SyncProgress{Digest: digest, Generation: 2, Phase: kustomizev1.PhaseFailed}}}
			got := s.retries().next(now)
			g.Expect(*got).To(Equal(tt.want))
			if tt.note != "" {
				g.Expect(retryNote(got, tt.policy.Limit)).To(Equal(tt.note))
			}
		})
	}
}
