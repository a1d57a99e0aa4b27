package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/panics"
)

// Object is what the skeleton reconciles: a Plumb API object with
// conditions and status.observedGeneration.
type Object interface {
	client.Object
	conditions.Setter
	GetObservedGeneration() int64
	SetObservedGeneration(int64)
}

// lastHandled is implemented by the kinds whose status records the
// reconcile.plumb.dev/requestedAt value they handled.
type lastHandled interface {
	SetLastHandledReconcileRequest(string)
}

// Step is one named stage of a reconcile. The step's doc comment names the
// conditions it sets; the name appears in logs and in the error handed to
// controller-runtime.
type Step struct {
	Name string
	Run  func(context.Context) error
}

// Controller is one controller's use of the skeleton: which condition
// speaks for the result, how status is written, and when to come back.
// Build it once, with the reconciler; Run is safe for concurrent use.
type Controller[T Object] struct {
	// Condition summarizes the outcome: meta.ReadyCondition, or Rendered
	// for render-controller, which shares the Kustomization's status.
	Condition string
	// Partial is set for a controller that writes a part of a status that
	// another owns: it sets only Condition, and leaves Reconciling,
	// Stalled, observedGeneration and lastHandledReconcileAt to the owner.
	Partial bool
	// SucceededReason is Condition's reason after a success;
	// meta.SucceededReason when empty.
	SucceededReason string
	// DefaultReason is the reason of a failure that names none (a plain
	// error from a step); meta.FailedReason when empty.
	DefaultReason string
	// Events records the failure events; nil records none.
	Events *events.Recorder
	// Metrics observes each reconcile's duration and the condition; nil
	// records none.
	Metrics *metrics.Object

	// OwnedStatus is the part of obj's status this controller owns: the
	// whole status, or a partial controller's own fields. Run applies it
	// with Client as FieldManager (ApplyStatus), once per Run and once
	// more before the steps of a new generation, and only when it differs
	// from what was read: an unchanged status is not written.
	OwnedStatus  func(obj T) any
	Client       client.Client
	FieldManager string
	// WriteStatus, when set, writes the status in place of OwnedStatus:
	// stored is obj as it was read, so that the controller too can leave
	// an unchanged status unwritten.
	WriteStatus func(ctx context.Context, obj, stored T) error
	// WriteProgress, when set, writes a new generation's Reconciling mark
	// (set on obj) in place of WriteStatus before the steps; it may hold
	// the write back, as long as what it holds never lands after a later
	// WriteStatus (sync-controller writes it only once the reconcile has
	// lasted a second: docs/design/anatomy-of-a-controller.md). The
	// final WriteStatus is then handed obj as marked for stored, so such a
	// controller keeps track of what it wrote itself.
	WriteProgress func(ctx context.Context, obj, stored T) error
	// Succeeded returns Condition's message after a success. Required.
	Succeeded func(T) string
	// RetryInterval, when set, is when to retry a Retry failure in place
	// of the object's own (meta.Retried: Flux's spec.retryInterval); with
	// neither, controller-runtime's exponential backoff. When to come back
	// after a success is the object's meta.Scheduled, jittered; a kind
	// that is not scheduled comes back only when a watch brings it.
	RetryInterval func(T) time.Duration
	// RetryDelay, when set, decides first when a Retry failure is tried
	// again: the object's own backoff and limit (a Kustomization's
	// spec.retry). ok false leaves the failure to RetryInterval, as for a
	// failure the object's rule does not count.
	RetryDelay func(T) (d RetryDecision, ok bool)
	// Keeping, when set, is appended to every failure's condition message:
	// what the object still serves despite the failure.
	Keeping func(T) string
	// EventOptions add detail to every failure event (the revision).
	EventOptions func(T) []events.Option
	// EventMessage turns a failure into its event message and volatile
	// details; nil uses the error's text. (A retried health timeout is
	// the same news on every attempt; only its volatile details differ.)
	EventMessage func(error) (string, []events.Option)
	// Finalizer is what Start does for the controller's finalizer.
	Finalizer Finalizer[T]
}

// Run runs the steps in order, stopping at the first error (or ErrStop),
// then — whatever happened, panics in a step included — summarizes the
// outcome into the conditions, writes the status once, records the
// metrics and says when to come back, as the outcome table of the package
// documentation says: that table is the one statement of what each
// outcome does.
func (c *Controller[T]) Run(ctx context.Context, obj T, steps ...Step) (ctrl.Result, error) {
	start := time.Now()
	defer func() { c.Metrics.Observe(obj.GetNamespace(), obj.GetName(), start) }()
	read := obj.DeepCopyObject().(T)
	if wrote, err := c.reportNewGeneration(ctx, obj, read); err != nil {
		return ctrl.Result{}, err
	} else if wrote {
		read = obj.DeepCopyObject().(T)
	}
	stored := slices.Clone(obj.GetConditions())
	step, err := runSteps(ctx, steps, c.Metrics)
	result, err := c.summarize(ctx, obj, step, err)
	BoundConditions(obj, stored)
	wrote := time.Now()
	werr := c.writeStatus(ctx, obj, read)
	c.Metrics.ObserveStep(StatusWriteStep, time.Since(wrote))
	c.Record(obj)
	if werr != nil {
		// controller-runtime retries a failed write with backoff; a
		// TerminalError joined to it would stop that.
		return ctrl.Result{}, werr
	}
	return result, err
}

// Record sets the condition and suspension gauges from obj, for a
// reconcile that ends before Run (a suspended object).
func (c *Controller[T]) Record(obj T) {
	var size *int64
	if a, ok := any(obj).(meta.ArtifactHolder); ok {
		size = ArtifactSize(a.GetArtifact())
	}
	c.Metrics.Record(obj.GetNamespace(), obj.GetName(), obj.GetConditions(), suspended(obj), size)
}

// reportNewGeneration marks a generation not seen before Reconciling and
// writes that (WriteProgress, else WriteStatus) before the slow part, so
// readers never take the old Ready for the new spec's. Retries of the same
// generation keep what the last attempt left.
func (c *Controller[T]) reportNewGeneration(ctx context.Context, obj, read T) (bool, error) {
	if c.Partial || obj.GetObservedGeneration() == obj.GetGeneration() {
		return false, nil
	}
	if rc := conditions.Get(obj, meta.ReconcilingCondition); rc != nil && rc.ObservedGeneration == obj.GetGeneration() {
		return false, nil
	}
	conditions.MarkReconciling(obj, meta.ProgressingReason, "reconciling generation %d", obj.GetGeneration())
	if c.WriteProgress != nil {
		return true, c.WriteProgress(ctx, obj, read)
	}
	return true, c.writeStatus(ctx, obj, read)
}

// writeStatus writes obj's status: WriteStatus's way when it is set, else
// the owned part, applied when it changed. A full owner sends its
// conditions even when there are none, so one that was dropped is removed
// rather than left behind; a partial one never sends another's.
func (c *Controller[T]) writeStatus(ctx context.Context, obj, read T) error {
	if c.WriteStatus != nil {
		return c.WriteStatus(ctx, obj, read)
	}
	owned := c.OwnedStatus(obj)
	if apiequality.Semantic.DeepEqual(owned, c.OwnedStatus(read)) {
		return nil
	}
	m, err := ToStatusMap(owned)
	if err != nil {
		return err
	}
	if _, ok := m["conditions"]; !ok && !c.Partial {
		m["conditions"] = []any{}
	}
	return client.IgnoreNotFound(ApplyStatus(ctx, c.Client, obj, c.FieldManager, m))
}

// StatusWriteStep names Run's status write among the durations of the
// steps (metrics.Object.ObserveStep): no step is named so.
const StatusWriteStep = "write-status"

// runSteps runs steps until one fails, and names it; m records how long
// each step ran, a failed one included. A panic fails the step (the steps
// read untrusted input) with a *panics.Error, logged with its stack.
func runSteps(ctx context.Context, steps []Step, m *metrics.Object) (string, error) {
	for _, s := range steps {
		start := time.Now()
		err := s.run(ctx)
		m.ObserveStep(s.Name, time.Since(start))
		if err != nil {
			if errors.Is(err, ErrStop) {
				return s.Name, nil
			}
			return s.Name, err
		}
	}
	return "", nil
}

func (s Step) run(ctx context.Context) (err error) {
	defer panics.Recover(&err, s.Name+" step")
	return s.Run(ctx)
}

// summarize is the one place that turns the steps' outcome into
// conditions, an event, a log line and a requeue decision (see Run).
func (c *Controller[T]) summarize(ctx context.Context, obj T, step string, err error) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if v := RequestedAt(obj); v != "" && !c.Partial {
		if h, ok := any(obj).(lastHandled); ok {
			h.SetLastHandledReconcileRequest(v)
		}
	}
	if err == nil {
		conditions.MarkTrue(obj, c.Condition, c.succeededReason(), "%s", c.Succeeded(obj))
		c.settle(obj)
		log.V(1).Info("reconciled", "message", conditions.GetMessage(obj, c.Condition))
		return requeueAfter(Jitter(interval(obj))), nil
	}
	if errors.Is(err, errSuspended) {
		conditions.MarkFalse(obj, c.Condition, meta.SuspendedReason, "suspended")
		c.settle(obj)
		return ctrl.Result{}, nil
	}

	e := classify(err, c.defaultReason())
	msg := err.Error()
	if c.Keeping != nil {
		msg += c.Keeping(obj)
	}
	kv := []any{"step", step, "reason", e.Reason}
	switch e.Policy {
	case InProgress:
		conditions.MarkUnknown(obj, c.Condition, e.Reason, "%s", msg)
		c.mark(obj, meta.ReconcilingCondition, e.Reason, msg)
		log.V(1).Info("in progress", append(kv, "message", msg)...)
		return requeueAfter(e.RequeueAfter), nil
	case Wait:
		conditions.MarkFalse(obj, c.Condition, e.Reason, "%s", msg)
		c.mark(obj, meta.ReconcilingCondition, e.Reason, msg)
		c.observe(obj)
		log.Info("waiting", append(kv, "message", msg)...)
		return requeueAfter(Jitter(e.RequeueAfter)), nil
	case Stall:
		conditions.MarkFalse(obj, c.Condition, e.Reason, "%s", msg)
		c.mark(obj, meta.StalledCondition, e.Reason, msg)
		c.observe(obj)
		c.event(obj, e)
		if e.RequeueAfter > 0 {
			log.Error(err, "reconcile stalled; polling", append(kv, "every", e.RequeueAfter.String())...)
			return requeueAfter(Jitter(e.RequeueAfter)), nil
		}
		return ctrl.Result{}, ctrlreconcile.TerminalError(fmt.Errorf("%s step (%s): %w", step, e.Reason, err))
	default:
		if c.RetryDelay != nil {
			if d, ok := c.RetryDelay(obj); ok {
				return c.retryOwn(ctx, obj, step, e, msg, d)
			}
		}
		conditions.MarkFalse(obj, c.Condition, e.Reason, "%s", msg)
		c.mark(obj, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying after: "+msg)
		c.observe(obj)
		c.event(obj, e)
		if d := c.retryInterval(obj); d > 0 {
			log.Error(err, "reconcile failed", append(kv, "retryIn", d.String())...)
			return requeueAfter(Jitter(d)), nil
		}
		return ctrl.Result{}, fmt.Errorf("%s step (%s): %w", step, e.Reason, err)
	}
}

// retryOwn sums up a Retry failure by the object's own retry rule
// (RetryDelay): Reconciling=True (ProgressingWithRetry) and back after
// d.After, or, once the retries are used up, Stalled=True
// (RetriesExceeded) and a TerminalError, like a stall. The event is
// recorded either way: it is a failed attempt.
func (c *Controller[T]) retryOwn(ctx context.Context, obj T, step string, e *Error, msg string, d RetryDecision) (ctrl.Result, error) {
	if d.Note != "" {
		msg += " (" + d.Note + ")"
	}
	conditions.MarkFalse(obj, c.Condition, e.Reason, "%s", msg)
	c.observe(obj)
	c.event(obj, e)
	kv := []any{"step", step, "reason", e.Reason}
	if d.Exhausted {
		c.mark(obj, meta.StalledCondition, meta.RetriesExceededReason, msg)
		return ctrl.Result{}, ctrlreconcile.TerminalError(fmt.Errorf("%s step (%s), retries exhausted: %w", step, e.Reason, e.Err))
	}
	c.mark(obj, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying after: "+msg)
	ctrl.LoggerFrom(ctx).Error(e.Err, "reconcile failed", append(kv, "retryIn", d.After.String())...)
	return requeueAfter(max(d.After, time.Millisecond)), nil
}

// settle removes Reconciling and Stalled and records the generation: the
// outcome is final for it.
func (c *Controller[T]) settle(obj T) {
	if c.Partial {
		return
	}
	conditions.Delete(obj, meta.ReconcilingCondition)
	conditions.Delete(obj, meta.StalledCondition)
	obj.SetObservedGeneration(obj.GetGeneration())
}

// mark sets one of Reconciling and Stalled True and removes the other.
func (c *Controller[T]) mark(obj T, condition, reason, msg string) {
	if c.Partial {
		return
	}
	other := meta.StalledCondition
	if condition == meta.StalledCondition {
		other = meta.ReconcilingCondition
	}
	conditions.Delete(obj, other)
	conditions.MarkTrue(obj, condition, reason, "%s", msg)
}

// observe records that this generation was judged (a failure included).
func (c *Controller[T]) observe(obj T) {
	if !c.Partial {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
}

// event records a failure event unless the step recorded its own.
func (c *Controller[T]) event(obj T, e *Error) {
	if e.Quiet || c.Events == nil {
		return
	}
	text, opts := e.Err.Error(), []events.Option(nil)
	if c.EventMessage != nil {
		text, opts = c.EventMessage(e.Err)
	}
	if c.EventOptions != nil {
		opts = append(opts, c.EventOptions(obj)...)
	}
	c.Events.Record(obj, events.SeverityError, e.Reason, text, opts...)
}

// interval is when a scheduled kind comes back after a success (its
// meta.Scheduled), 0 for a kind only watched.
func interval(obj any) time.Duration {
	if s, ok := obj.(meta.Scheduled); ok {
		return s.GetRequeueAfter()
	}
	return 0
}

// retryInterval is when a Retry failure is tried again: RetryInterval,
// else the object's meta.Retried, else 0 (controller-runtime's backoff).
func (c *Controller[T]) retryInterval(obj T) time.Duration {
	if c.RetryInterval != nil {
		return c.RetryInterval(obj)
	}
	if r, ok := any(obj).(meta.Retried); ok {
		return r.GetRetryInterval()
	}
	return 0
}

// suspended says whether obj is a meta.Suspendable kind, suspended.
func suspended(obj any) bool {
	s, ok := obj.(meta.Suspendable)
	return ok && s.IsSuspended()
}

func (c *Controller[T]) succeededReason() string {
	if c.SucceededReason != "" {
		return c.SucceededReason
	}
	return meta.SucceededReason
}

func (c *Controller[T]) defaultReason() string {
	if c.DefaultReason != "" {
		return c.DefaultReason
	}
	return meta.FailedReason
}

func requeueAfter(d time.Duration) ctrl.Result {
	if d <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: d}
}

// Bind returns the step named name that runs run on one reconcile's object
// and state: the shape of every controller's step methods,
// func(ctx, obj, state) error.
func Bind[T, S any](name string, run func(context.Context, T, S) error, obj T, st S) Step {
	return Step{Name: name, Run: func(ctx context.Context) error { return run(ctx, obj, st) }}
}
