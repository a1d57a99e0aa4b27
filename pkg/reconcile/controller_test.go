package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/panics"
	"plumb.dev/pkg/reconcile"
)

// captured collects the events a Recorder publishes.
type captured struct{ events []events.Event }

func (c *captured) Publish(e events.Event) { c.events = append(c.events, e) }

// harness is a skeleton over a GitRepository whose status writes are
// recorded instead of sent: the skeleton's decisions are what is tested
// here; ApplyStatus is tested against the API server in status_test.go.
type harness struct {
	sk       *reconcile.Controller[*sourcev1.GitRepository]
	stream   *captured
	writes   []*sourcev1.GitRepository
	writeErr error
}

func newHarness(configure ...func(*reconcile.Controller[*sourcev1.GitRepository])) *harness {
	h := &harness{stream: &captured{}}
	h.sk = &reconcile.Controller[*sourcev1.GitRepository]{
		Condition:     meta.ReadyCondition,
		DefaultReason: "DefaultReason",
		Events:        events.NewRecorder(nil, h.stream, nil, "test-controller"),
		WriteStatus: func(_ context.Context, obj, _ *sourcev1.GitRepository) error {
			h.writes = append(h.writes, obj.DeepCopy())
			return h.writeErr
		},
		Succeeded: func(*sourcev1.GitRepository) string { return "all done" },
	}
	for _, c := range configure {
		c(h.sk)
	}
	return h
}

// repository is a GitRepository whose generation 3 was last judged.
func repository() *sourcev1.GitRepository {
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "repo", Generation: 3},
		Spec:       sourcev1.GitRepositorySpec{Interval: metav1.Duration{Duration: time.Minute}},
	}
	obj.Status.ObservedGeneration = 3
	return obj
}

func step(name string, err error) reconcile.Step {
	return reconcile.Step{Name: name, Run: func(context.Context) error { return err }}
}

func within5Percent(d time.Duration) (time.Duration, time.Duration) {
	return d - d/20, d + d/20
}

// The skeleton's outcomes, one per policy: what Ready, Reconciling and
// Stalled say, whether observedGeneration moves, whether an event is
// recorded, and what controller-runtime is handed.
func TestRunSummarizesEachOutcome(t *testing.T) {
	boom := errors.New("remote hung up")
	tests := []struct {
		name      string
		configure func(*reconcile.Controller[*sourcev1.GitRepository])
		err       error
		// want
		ready           metav1.ConditionStatus
		readyReason     string
		reconciling     string // reason; "" for absent
		stalled         string // reason; "" for absent
		observed        int64
		event           bool
		requeue         time.Duration // 0: none
		returned        bool
		terminal        bool
		messageContains string
	}{
		{name: "success", err: nil,
			ready: metav1.ConditionTrue, readyReason: meta.SucceededReason, observed: 4,
			requeue: time.Minute, messageContains: "all done"},
		{name: "stop ends the steps with success", err: reconcile.ErrStop,
			ready: metav1.ConditionTrue, readyReason: meta.SucceededReason, observed: 4, requeue: time.Minute},
		{name: "retry without a retry interval is controller-runtime's backoff", err: reconcile.Failed("Broken", boom),
			ready: metav1.ConditionFalse, readyReason: "Broken", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, event: true, returned: true, messageContains: "remote hung up"},
		{name: "retry with a retry interval requeues without an error",
			configure: func(c *reconcile.Controller[*sourcev1.GitRepository]) {
				c.RetryInterval = func(*sourcev1.GitRepository) time.Duration { return 30 * time.Second }
			},
			err:   reconcile.Failed("Broken", boom),
			ready: metav1.ConditionFalse, readyReason: "Broken", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, event: true, requeue: 30 * time.Second},
		{name: "retry by the object's own rule requeues after its delay, with its note",
			configure: func(c *reconcile.Controller[*sourcev1.GitRepository]) {
				c.RetryInterval = func(*sourcev1.GitRepository) time.Duration { return time.Hour }
				c.RetryDelay = func(*sourcev1.GitRepository) (reconcile.RetryDecision, bool) {
					return reconcile.RetryDecision{After: 20 * time.Second, Note: "retry 2 of 5"}, true
				}
			},
			err:   reconcile.Failed("Broken", boom),
			ready: metav1.ConditionFalse, readyReason: "Broken", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, event: true, requeue: 20 * time.Second, messageContains: "remote hung up (retry 2 of 5)"},
		{name: "retries used up by the object's own rule stall",
			configure: func(c *reconcile.Controller[*sourcev1.GitRepository]) {
				c.RetryInterval = func(*sourcev1.GitRepository) time.Duration { return time.Hour }
				c.RetryDelay = func(*sourcev1.GitRepository) (reconcile.RetryDecision, bool) {
					return reconcile.RetryDecision{Exhausted: true, Note: "retried 3 times"}, true
				}
			},
			err:   reconcile.Failed("Broken", boom),
			ready: metav1.ConditionFalse, readyReason: "Broken", stalled: meta.RetriesExceededReason,
			observed: 4, event: true, returned: true, terminal: true, messageContains: "remote hung up (retried 3 times)"},
		{name: "a failure the object's own rule does not count keeps the retry interval",
			configure: func(c *reconcile.Controller[*sourcev1.GitRepository]) {
				c.RetryInterval = func(*sourcev1.GitRepository) time.Duration { return 30 * time.Second }
				c.RetryDelay = func(*sourcev1.GitRepository) (reconcile.RetryDecision, bool) {
					return reconcile.RetryDecision{}, false
				}
			},
			err:   reconcile.Failed("Broken", boom),
			ready: metav1.ConditionFalse, readyReason: "Broken", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, event: true, requeue: 30 * time.Second},
		{name: "a stall is not the object's retry rule's to decide",
			configure: func(c *reconcile.Controller[*sourcev1.GitRepository]) {
				c.RetryDelay = func(*sourcev1.GitRepository) (reconcile.RetryDecision, bool) {
					return reconcile.RetryDecision{After: time.Second}, true
				}
			},
			err:   reconcile.Stalled(meta.InvalidSpecReason, boom),
			ready: metav1.ConditionFalse, readyReason: meta.InvalidSpecReason, stalled: meta.InvalidSpecReason,
			observed: 4, event: true, returned: true, terminal: true},
		{name: "a plain error is a retry with the default reason", err: boom,
			ready: metav1.ConditionFalse, readyReason: "DefaultReason", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, event: true, returned: true},
		{name: "stall is a terminal error", err: reconcile.Stalled(meta.InvalidSpecReason, boom),
			ready: metav1.ConditionFalse, readyReason: meta.InvalidSpecReason, stalled: meta.InvalidSpecReason,
			observed: 4, event: true, returned: true, terminal: true},
		{name: "a stall that polls requeues", err: reconcile.Stalled("TooLarge", boom).Polling(time.Hour),
			ready: metav1.ConditionFalse, readyReason: "TooLarge", stalled: "TooLarge",
			observed: 4, event: true, requeue: time.Hour},
		{name: "controller-runtime's terminal error is a stall", err: ctrlreconcile.TerminalError(boom),
			ready: metav1.ConditionFalse, readyReason: "DefaultReason", stalled: "DefaultReason",
			observed: 4, event: true, returned: true, terminal: true},
		{name: "wait is no failure", err: reconcile.Waiting(meta.DependencyNotReadyReason, 10*time.Second, boom),
			ready: metav1.ConditionFalse, readyReason: meta.DependencyNotReadyReason, reconciling: meta.DependencyNotReadyReason,
			observed: 4, requeue: 10 * time.Second},
		{name: "in progress leaves the generation unobserved", err: reconcile.Progressing(meta.ProgressingReason, boom),
			ready: metav1.ConditionUnknown, readyReason: meta.ProgressingReason, reconciling: meta.ProgressingReason,
			observed: 3},
		{name: "suspended", err: reconcile.Suspended(),
			ready: metav1.ConditionFalse, readyReason: meta.SuspendedReason, observed: 4},
		{name: "a quiet failure records no event", err: reconcile.Failed("Broken", boom).WithoutEvent(),
			ready: metav1.ConditionFalse, readyReason: "Broken", reconciling: meta.ProgressingWithRetryReason,
			observed: 4, returned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness()
			if tt.configure != nil {
				tt.configure(h.sk)
			}
			obj := repository()
			obj.Generation = 4
			// Stalled from an earlier attempt: every outcome but a stall
			// clears it.
			conditions.MarkStalled(obj, "Earlier", "earlier")
			ran := 0
			count := reconcile.Step{Name: "after", Run: func(context.Context) error { ran++; return nil }}

			result, err := h.sk.Run(context.Background(), obj, step("first", tt.err), count)

			ready := conditions.Get(obj, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.ready))
			g.Expect(ready.Reason).To(Equal(tt.readyReason))
			g.Expect(ready.Message).To(ContainSubstring(tt.messageContains))
			if tt.reconciling == "" {
				g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).To(BeNil())
			} else {
				g.Expect(conditions.Get(obj, meta.ReconcilingCondition).Reason).To(Equal(tt.reconciling))
			}
			if tt.stalled == "" && tt.ready != metav1.ConditionUnknown {
				g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
			} else if tt.stalled != "" {
				g.Expect(conditions.Get(obj, meta.StalledCondition).Reason).To(Equal(tt.stalled))
			}
			g.Expect(obj.Status.ObservedGeneration).To(Equal(tt.observed))
			if tt.event {
				g.Expect(h.stream.events).To(HaveLen(1))
				g.Expect(h.stream.events[0].Severity).To(Equal(events.SeverityError))
				g.Expect(h.stream.events[0].Reason).To(Equal(tt.readyReason))
			} else {
				g.Expect(h.stream.events).To(BeEmpty())
			}
			if tt.requeue == 0 {
				g.Expect(result.RequeueAfter).To(BeZero())
			} else {
				lo, hi := within5Percent(tt.requeue)
				g.Expect(result.RequeueAfter).To(BeNumerically(">=", lo))
				g.Expect(result.RequeueAfter).To(BeNumerically("<=", hi))
			}
			if tt.returned {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(ContainSubstring("first step"))
				g.Expect(errors.Is(err, ctrlreconcile.TerminalError(nil))).To(Equal(tt.terminal))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			// The steps after a failure (or a stop) do not run.
			if tt.err == nil {
				g.Expect(ran).To(Equal(1))
			} else {
				g.Expect(ran).To(BeZero())
			}
			// A new generation was reported in progress first, then the
			// outcome was written once.
			g.Expect(h.writes).To(HaveLen(2))
			g.Expect(conditions.Get(h.writes[0], meta.ReconcilingCondition).Message).To(Equal("reconciling generation 4"))
		})
	}
}

// Every attempt of a failure records its event: the same failure retried
// is the same news (one fingerprint, for the dispatcher to alert once per
// interval), a different message or reason is other news.
func TestRunRecordsAFailureEventPerAttempt(t *testing.T) {
	g := NewWithT(t)
	h := newHarness()
	obj := repository()
	fail := func(reason, msg string) {
		_, _ = h.sk.Run(context.Background(), obj, step("fetch", reconcile.Failed(reason, errors.New(msg))))
	}
	fail("Broken", "timeout")
	fail("Broken", "timeout")
	fail("Broken", "timeout")
	g.Expect(h.stream.events).To(HaveLen(3))
	first := events.Fingerprint(&h.stream.events[0])
	for _, e := range h.stream.events {
		g.Expect(e.Reason).To(Equal("Broken"))
		g.Expect(events.Fingerprint(&e)).To(Equal(first))
	}
	fail("Broken", "connection refused")
	fail("Refused", "connection refused")
	g.Expect(h.stream.events).To(HaveLen(5))
	g.Expect(events.Fingerprint(&h.stream.events[3])).NotTo(Equal(first))
	g.Expect(events.Fingerprint(&h.stream.events[4])).NotTo(Equal(events.Fingerprint(&h.stream.events[3])))
}

// A generation already observed is not reported in progress again: one
// status write per reconcile.
func TestRunWritesStatusOncePerReconcile(t *testing.T) {
	g := NewWithT(t)
	h := newHarness()
	_, err := h.sk.Run(context.Background(), repository(), step("only", nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.writes).To(HaveLen(1))
}

// A controller with WriteProgress is handed a new generation's Reconciling
// mark through it, before the steps, and WriteStatus writes only the
// outcome.
func TestRunHandsANewGenerationsMarkToWriteProgress(t *testing.T) {
	g := NewWithT(t)
	var progress []*sourcev1.GitRepository
	ranAfter := false
	h := newHarness(func(sk *reconcile.Controller[*sourcev1.GitRepository]) {
		sk.WriteProgress = func(_ context.Context, obj, _ *sourcev1.GitRepository) error {
			progress = append(progress, obj.DeepCopy())
			return nil
		}
	})
	obj := repository()
	obj.Generation = 4
	_, err := h.sk.Run(context.Background(), obj, reconcile.Step{Name: "only", Run: func(context.Context) error {
		ranAfter = len(progress) == 1
		return nil
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ranAfter).To(BeTrue(), "the mark is handed over before the steps")
	g.Expect(conditions.Get(progress[0], meta.ReconcilingCondition).Message).To(Equal("reconciling generation 4"))
	g.Expect(h.writes).To(HaveLen(1))
	g.Expect(conditions.IsReady(h.writes[0])).To(BeTrue())
}

// A status write that fails is returned for controller-runtime's backoff,
// whatever the steps did.
func TestRunReturnsAFailedStatusWrite(t *testing.T) {
	g := NewWithT(t)
	h := newHarness()
	h.writeErr = errors.New("conflict")
	result, err := h.sk.Run(context.Background(), repository(), step("only", reconcile.Stalled("Bad", errors.New("bad"))))
	g.Expect(err).To(MatchError("conflict"))
	g.Expect(errors.Is(err, ctrlreconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(result).To(Equal(ctrl.Result{}))
}

// A panic in a step fails the step like any error, and the reconcile goes
// on to write status.
func TestRunTurnsAPanicIntoAFailure(t *testing.T) {
	g := NewWithT(t)
	h := newHarness()
	obj := repository()
	_, err := h.sk.Run(context.Background(), obj, reconcile.Step{Name: "parse", Run: func(context.Context) error {
		panic("unexpected end of YAML")
	}})
	var p *panics.Error
	g.Expect(errors.As(err, &p)).To(BeTrue())
	g.Expect(conditions.IsFalse(obj, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.GetReason(obj, meta.ReadyCondition)).To(Equal("DefaultReason"))
	g.Expect(h.writes).To(HaveLen(1))
}

// A partial controller (render-controller on a Kustomization) sets only its
// own condition: Reconciling, Stalled and observedGeneration belong to the
// status's owner, and no new generation is reported in progress by it.
func TestRunOfAPartialControllerSetsOnlyItsCondition(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(func(c *reconcile.Controller[*sourcev1.GitRepository]) {
		c.Condition = "Rendered"
		c.Partial = true
	})
	obj := repository()
	obj.Generation = 4
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
	_, err := h.sk.Run(context.Background(), obj, step("build", reconcile.Stalled("BuildFailed", errors.New("bad"))))
	g.Expect(errors.Is(err, ctrlreconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(conditions.GetReason(obj, "Rendered")).To(Equal("BuildFailed"))
	g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
	g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(conditions.Get(obj, meta.ReadyCondition)).To(BeNil())
	g.Expect(obj.Status.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(obj.Status.LastHandledReconcileAt).To(BeEmpty())
	g.Expect(h.writes).To(HaveLen(1))
}

// Keeping is appended to every failure message, the event's detail comes
// from EventMessage and EventOptions, and the requestedAt annotation is
// recorded as handled.
func TestRunDescribesFailures(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(func(c *reconcile.Controller[*sourcev1.GitRepository]) {
		c.Keeping = func(*sourcev1.GitRepository) string { return " (still serving v1)" }
		c.EventMessage = func(err error) (string, []events.Option) {
			return "summary of " + err.Error(), []events.Option{events.WithVolatile(map[string]string{"attempt": "7"})}
		}
		c.EventOptions = func(*sourcev1.GitRepository) []events.Option {
			return []events.Option{events.WithRevision("main@sha1:abc")}
		}
	})
	obj := repository()
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "2026-12-01T10:00:00Z"}
	_, _ = h.sk.Run(context.Background(), obj, step("fetch", reconcile.Failed("Broken", errors.New("timeout"))))
	g.Expect(conditions.GetMessage(obj, meta.ReadyCondition)).To(Equal("timeout (still serving v1)"))
	g.Expect(conditions.GetMessage(obj, meta.ReconcilingCondition)).To(Equal("retrying after: timeout (still serving v1)"))
	g.Expect(h.stream.events).To(HaveLen(1))
	e := h.stream.events[0]
	g.Expect(e.Message).To(Equal("summary of timeout"))
	g.Expect(e.Revision).To(Equal("main@sha1:abc"))
	g.Expect(e.Metadata).To(HaveKeyWithValue(events.VolatilePrefix+"attempt", "7"))
	g.Expect(obj.Status.LastHandledReconcileAt).To(Equal("2026-12-01T10:00:00Z"))
}

// Bind hands a step method the reconcile's object and state.
func TestBindPassesObjectAndState(t *testing.T) {
	g := NewWithT(t)
	type state struct{ seen string }
	st := &state{}
	obj := repository()
	s := reconcile.Bind("look", func(_ context.Context, o *sourcev1.GitRepository, st *state) error {
		st.seen = o.Name
		return fmt.Errorf("saw %s", o.Name)
	}, obj, st)
	g.Expect(s.Name).To(Equal("look"))
	g.Expect(s.Run(context.Background())).To(MatchError("saw repo"))
	g.Expect(st.seen).To(Equal("repo"))
}

// Backoff.Delay is Argo CD's sync retry rule: duration·factor^(n-1) for
// retry n, capped at the maximum.
func TestBackoffDelay(t *testing.T) {
	argo := reconcile.Backoff{First: 5 * time.Second, Factor: 2, Max: 3 * time.Minute}
	tests := []struct {
		name    string
		backoff reconcile.Backoff
		retry   int64
		want    time.Duration
	}{
		{"the first retry waits the duration", argo, 1, 5 * time.Second},
		{"the second waits factor times longer", argo, 2, 10 * time.Second},
		{"the fifth", argo, 5, 80 * time.Second},
		{"the sixth", argo, 6, 160 * time.Second},
		{"the seventh is capped at the maximum", argo, 7, 3 * time.Minute},
		{"a retry far beyond the cap does not overflow", argo, 10000, 3 * time.Minute},
		{"factor 1 is a constant delay", reconcile.Backoff{First: time.Second, Factor: 1, Max: time.Minute}, 9, time.Second},
		{"a maximum equal to the duration is a constant delay", reconcile.Backoff{First: time.Minute, Factor: 3, Max: time.Minute}, 4, time.Minute},
		{"no maximum grows without cap", reconcile.Backoff{First: time.Second, Factor: 10}, 4, 1000 * time.Second},
		{"no maximum and a huge exponent saturates", reconcile.Backoff{First: time.Second, Factor: 1000}, 100, time.Duration(math.MaxInt64)},
		{"retry 0 is taken as the first", argo, 0, 5 * time.Second},
		{"a factor below 1 is taken as 1", reconcile.Backoff{First: time.Second, Factor: 0, Max: time.Minute}, 3, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.backoff.Delay(tt.retry)).To(Equal(tt.want))
		})
	}
}

// Objects created together, with one interval, come back at different
// times after a success, each within 5% of the interval, so they do not
// reconcile in step for ever (as Flux jitters its success requeue).
func TestObjectsReconciledTogetherDriftApart(t *testing.T) {
	g := NewWithT(t)
	h := newHarness()
	seen := map[time.Duration]bool{}
	lo, hi := within5Percent(time.Minute)
	for range 20 {
		result, err := h.sk.Run(context.Background(), repository())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.RequeueAfter).To(BeNumerically(">=", lo))
		g.Expect(result.RequeueAfter).To(BeNumerically("<=", hi))
		seen[result.RequeueAfter] = true
	}
	// Twenty draws from three seconds' worth of nanoseconds: the same
	// value twice is a one-in-ten-million chance, all the same never.
	g.Expect(len(seen)).To(BeNumerically(">", 1), "every object comes back after the same %v", seen)
}

// Run times each step it runs, the one that fails included, and its status
// write, into the kind's step histogram: a step after the failure ran
// no time and has no sample.
func TestRunTimesEachStepAndTheStatusWrite(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	h := newHarness(func(c *reconcile.Controller[*sourcev1.GitRepository]) {
		c.Metrics = metrics.NewObject(reg, metrics.Spec{Subsystem: "test", Kind: "GitRepository", Condition: meta.ReadyCondition})
	})
	slow := reconcile.Step{Name: "fetch", Run: func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }}
	_, _ = h.sk.Run(context.Background(), repository(), slow, step("verify", errors.New("bad signature")), step("store", nil))
	_, _ = h.sk.Run(context.Background(), repository(), slow)

	samples := map[string]uint64{}
	sums := map[string]float64{}
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "plumb_test_step_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			g.Expect(m.GetLabel()).To(HaveLen(1), "the step, no object labels")
			samples[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
		}
	}
	g.Expect(samples).To(Equal(map[string]uint64{"fetch": 2, "verify": 1, reconcile.StatusWriteStep: 2}))
	g.Expect(sums["fetch"]).To(BeNumerically(">=", 0.040), "two runs of a step that sleeps 20 ms")
}
