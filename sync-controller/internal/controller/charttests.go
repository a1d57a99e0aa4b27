package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
)

// runChartTests is a HelmRelease's step "tests", after the health check:
// with spec.test.enable, it runs the chart's tests against the newest
// release once that release is deployed and has not been tested
// (Snapshot.HasBeenTested), as `helm test` runs them (testRelease), and
// records them in status.history[0].testHooks and the TestSuccess
// condition (TestSucceeded, TestFailed) with an event. While the release's
// tests have failed and failures are not ignored (test.ignoreFailures, or
// the action's remediation.ignoreTestFailures, which wins:
// HelmRelease.IgnoresTestFailures) every run ends
// with Ready=False reason TestFailed, without running them again, and the
// failure is the release's (failReleaseByTests): retried or remediated as
// a failed sync is, by the action's strategy and remediation (a rollback
// is a new release, tested anew). Without test.enable the condition is removed. A
// Kustomization has no tests.
func (s *syncRun) runChartTests(ctx context.Context) error {
	hr, ok := s.out.(*helmv2.HelmRelease)
	if !ok {
		return nil
	}
	if !hr.TestsEnabled() {
		conditions.Delete(s.out, helmv2.TestSuccessCondition)
		return nil
	}
	if len(hr.Status.History) == 0 || (s.rel != nil && s.rel.action == correctRelease) {
		return nil // nothing released, or a sync window holds what would be
	}
	cur := &hr.Status.History[0]
	if cur.Status != helmv2.ReleaseStatusDeployed || cur.Digest != s.digest {
		return nil
	}
	tested := false
	if !cur.HasBeenTested() {
		if err := s.testRelease(ctx, hr); err != nil {
			return err
		}
		tested = true
	}
	if !cur.TestsFailed() || hr.IgnoresTestFailures() {
		return nil
	}
	why := "the chart's tests failed"
	if c := conditions.Get(s.out, helmv2.TestSuccessCondition); c != nil {
		why = c.Message
	}
	if tested {
		s.failReleaseByTests(hr, why)
	}
	// The last applied revision is what runs, tests or not.
	s.st.LastAppliedRevision = s.revision
	return reconcile.Failed(helmv2.TestFailedReason, errors.New(why)).WithoutEvent()
}

// testRelease runs the selected test hooks (test.filters) one at a time in
// Helm's order (pkg/plan.ChartTests: weight, then name): each is created
// (a leftover of an earlier run deleted first), then waited on until it
// succeeded or failed — a Pod until its phase is Succeeded or Failed,
// whatever its restartPolicy (waitTestPodCompleted), a Job until Complete
// or Failed (pkg/health), any other kind counts once created —
// within test.timeout (spec.timeout when unset). The first failure ends
// the run, as in Helm: the tests after it do not run. Then the delete
// policies: hook-failed deletes the failed hook, hook-succeeded the ones
// that succeeded. Each hook's progress is written into status as it goes
// (phase Running), so the UI shows it; a run the controller did not finish
// runs again. An error that is no test's (the controller stopping) is
// returned and records nothing.
func (s *syncRun) testRelease(ctx context.Context, hr *helmv2.HelmRelease) error {
	cur := &hr.Status.History[0]
	filters := hr.GetTestFilters()
	hooks, err := plan.ChartTests(s.objs, s.testID(), func(name string) bool { return helmv2.TestSelected(name, filters) })
	results := map[string]*helmv2.TestHookStatus{}
	cur.TestHooks = &results
	release := fmt.Sprintf("%s/%s.v%d with chart %s@%s", cur.Namespace, cur.Name, cur.Version, cur.ChartName, cur.ChartVersion)
	if err != nil {
		s.testsFailed(release, err)
		return nil
	}
	for _, h := range hooks {
		results[h.GetName()] = &helmv2.TestHookStatus{}
	}
	var succeeded []plan.Object
	for i, h := range hooks {
		st := results[h.GetName()]
		now := metav1.Now()
		st.LastStarted, st.Phase = &now, helmv2.TestHookPhaseRunning
		s.showTest(ctx, h.GetName(), i+1, len(hooks))
		err := s.runTestHook(ctx, hr.GetTestTimeout(), h.Object)
		if ctx.Err() != nil {
			cur.TestHooks = nil // stopped, not failed: run again
			return ctx.Err()
		}
		done := metav1.Now()
		st.LastCompleted = &done
		if err != nil {
			st.Phase = helmv2.TestHookPhaseFailed
			s.finishTestHooks(ctx, []plan.Object{h.Object}, false)
			s.finishTestHooks(ctx, succeeded, true)
			s.testsFailed(release, fmt.Errorf("test %s: %w", h.GetName(), err))
			return nil
		}
		st.Phase = helmv2.TestHookPhaseSucceeded
		succeeded = append(succeeded, h.Object)
	}
	s.finishTestHooks(ctx, succeeded, true)
	what := "no test hooks"
	if n := len(hooks); n == 1 {
		what = "1 test hook completed successfully"
	} else if n > 1 {
		what = fmt.Sprintf("%d test hooks completed successfully", n)
	}
	msg := fmt.Sprintf("Helm test succeeded for release %s: %s", release, what)
	conditions.MarkTrue(s.out, helmv2.TestSuccessCondition, helmv2.TestSucceededReason, "%s", msg)
	s.r.Events.Record(s.obj, events.SeverityInfo, helmv2.TestSucceededReason, msg, events.WithRevision(s.revision))
	return nil
}

// testID labels the test hooks of one release's tests: the sync operation
// that deployed it, so that a restarted controller finds the hook it was
// waiting on, and a new release's tests replace the old ones.
func (s *syncRun) testID() string { return "test-" + s.syncID() }

// runTestHook creates one test hook and waits until it succeeded or
// failed, within timeout.
func (s *syncRun) runTestHook(ctx context.Context, timeout time.Duration, h plan.Object) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.startHookOf(ctx, h, s.testID()); err != nil {
		return err
	}
	if _, err := s.target.Engine.WaitHealthy(ctx, []*unstructured.Unstructured{h.Unstructured}, s.tally.applied, nil); err != nil {
		return err
	}
	return s.waitTestPodCompleted(ctx, timeout, h.Unstructured)
}

// showTest writes which test runs into Reconciling and Ready (Unknown)
// and the history's testHooks into status, so that a long test is seen
// while it lasts. A failed write is only logged: the tests go on.
func (s *syncRun) showTest(ctx context.Context, name string, n, of int) {
	msg := fmt.Sprintf("running test %s (%d of %d)", name, n, of)
	conditions.MarkReconciling(s.out, meta.ProgressingReason, "%s", msg)
	conditions.MarkUnknown(s.out, meta.ReadyCondition, meta.ProgressingReason, "%s", msg)
	if err := s.status.write(ctx, s.st); err != nil {
		log.FromContext(ctx).Error(err, "writing the test progress")
	}
}

// finishTestHooks deletes the hooks whose delete policy asks for it after
// the given outcome. A failure is logged, not the test's: Helm does the
// same.
func (s *syncRun) finishTestHooks(ctx context.Context, hooks []plan.Object, succeeded bool) {
	if err := s.finishHooks(ctx, hooks, succeeded); err != nil {
		log.FromContext(ctx).Error(err, "deleting test hooks by their delete policy")
	}
}

// testsFailed sets TestSuccess=False (TestFailed) and records a warning
// event, Flux's message.
func (s *syncRun) testsFailed(release string, err error) {
	msg := message.Truncate(fmt.Sprintf("Helm test failed for release %s: %s", release, strings.TrimSpace(err.Error())))
	conditions.MarkFalse(s.out, helmv2.TestSuccessCondition, helmv2.TestFailedReason, "%s", msg)
	s.r.Events.Record(s.obj, events.SeverityError, helmv2.TestFailedReason, msg, events.WithRevision(s.revision))
}

// failReleaseByTests makes the newest release a failed one because its
// tests failed, as Flux's helm-controller counts a failed test: the
// release is failed in the history (so that a rollback goes back to the
// release deployed before it), Released=False with the action's reason,
// the attempt's failure counters count it, and the action's strategy and
// remediation decide what follows (decideRelease, at the next run).
func (s *syncRun) failReleaseByTests(hr *helmv2.HelmRelease, why string) {
	cur := &hr.Status.History[0]
	verb := hr.Status.LastAttemptedReleaseAction
	if verb == "" {
		verb = helmv2.ReleaseActionUpgrade
	}
	cur.Status = helmv2.ReleaseStatusFailed
	cur.Description = describeRelease(verb, cur.Name, errors.New(why))
	// The release it superseded is the deployed one again, as after a
	// failed sync: what a rollback goes back to.
	for i := 1; i < len(hr.Status.History); i++ {
		if hr.Status.History[i].Status == helmv2.ReleaseStatusSuperseded {
			hr.Status.History[i].Status = helmv2.ReleaseStatusDeployed
			break
		}
	}
	conditions.MarkFalse(s.out, helmv2.ReleasedCondition, failedReason(verb), "%s", message.Truncate(why))
	countFailure(s, hr, verb)
}
