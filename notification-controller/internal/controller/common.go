package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// FieldManager owns the status fields notification-controller writes.
const FieldManager = "plumb-notification"

// Field indexes the reconcilers and the receiver server look objects up by.
const (
	// ProviderRefIndex indexes Alerts by spec.providerRef.name.
	ProviderRefIndex = ".spec.providerRef.name"
)

// retryInterval is how soon an object waiting for a Secret or Provider is
// looked at again when no watch event comes first.
const retryInterval = 30 * time.Second

// ownedConditions are the conditions the patch helper lets this controller
// overwrite.
var ownedConditions = []string{meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition}

// object is what the shared status code works on.
type object interface {
	conditions.Setter
	status() *notificationv1.Status
}

type providerObj struct{ *notificationv1.Provider }

func (o providerObj) status() *notificationv1.Status { return &o.Status }

type alertObj struct{ *notificationv1.Alert }

func (o alertObj) status() *notificationv1.Status { return &o.Status }

type receiverObj struct{ *notificationv1.Receiver }

func (o receiverObj) status() *notificationv1.Status { return &o.Status.Status }

// step is one named stage of a reconcile.
type step[T any] struct {
	name string
	run  func(context.Context, T) error
}

// run executes the steps in order, stopping at the first error, and
// patches the status whatever happened, its condition messages bounded by
// BoundConditions (the patch helper does not go through ApplyStatus).
func run[T client.Object](ctx context.Context, c client.Client, obj T, wrap object, steps []step[T], ready func() string) (ctrl.Result, error) {
	patcher := patch.NewSerialPatcher(obj, c)
	stored := slices.Clone(wrap.GetConditions())
	var err error
	for _, s := range steps {
		if err = s.run(ctx, obj); err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("step failed", "step", s.name, "error", err.Error())
			break
		}
	}
	result, err := summarize(wrap, err, ready)
	plumbreconcile.BoundConditions(wrap, stored)
	perr := patcher.Patch(ctx, obj,
		patch.WithOwnedConditions{Conditions: ownedConditions},
		patch.WithFieldOwner(FieldManager))
	if perr != nil {
		err = errors.Join(err, client.IgnoreNotFound(perr))
	}
	return result, err
}

// refreshSecret makes an object with a Secret come back after interval
// when nothing else brings it back sooner: notification-controller may get
// Secrets by name but not watch them, so a rotated token is noticed by
// reading the Secret again.
func refreshSecret(result ctrl.Result, err error, interval time.Duration) ctrl.Result {
	if err != nil || interval <= 0 {
		return result
	}
	if after := plumbreconcile.Jitter(interval); result.RequeueAfter == 0 || after < result.RequeueAfter {
		result.RequeueAfter = after
	}
	return result
}

// suspendedError stops the steps of a suspended object.
var errSuspended = errors.New("suspended")

// summarize sets Ready, Reconciling and Stalled from the steps' outcome and
// says when to come back: never on success or a stalled spec (a change
// triggers a reconcile), after retryInterval when waiting for a dependency,
// with controller-runtime's backoff on other errors.
func summarize(obj object, err error, ready func() string) (ctrl.Result, error) {
	st := obj.status()
	var stalled *plumbreconcile.StalledError
	switch {
	case err == nil:
		conditions.Delete(obj, meta.ReconcilingCondition)
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "%s", ready())
		st.ObservedGeneration = obj.GetGeneration()
		return ctrl.Result{}, nil
	case errors.Is(err, errSuspended):
		conditions.Delete(obj, meta.ReconcilingCondition)
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkFalse(obj, meta.ReadyCondition, meta.SuspendedReason, "suspended")
		st.ObservedGeneration = obj.GetGeneration()
		return ctrl.Result{}, nil
	case errors.As(err, &stalled):
		conditions.Delete(obj, meta.ReconcilingCondition)
		conditions.MarkStalled(obj, stalled.Reason, "%s", err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, stalled.Reason, "%s", err.Error())
		st.ObservedGeneration = obj.GetGeneration()
		return ctrl.Result{}, nil
	}
	if w, ok := plumbreconcile.AsWaiting(err); ok {
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkReconciling(obj, w.Reason, "%s", err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, w.Reason, "%s", err.Error())
		st.ObservedGeneration = obj.GetGeneration()
		return ctrl.Result{RequeueAfter: plumbreconcile.Jitter(w.RequeueAfter)}, nil
	}
	conditions.Delete(obj, meta.StalledCondition)
	conditions.MarkReconciling(obj, meta.ProgressingReason, "retrying after: %s", err.Error())
	conditions.MarkFalse(obj, meta.ReadyCondition, meta.FailedReason, "%s", err.Error())
	return ctrl.Result{}, err
}

// requestsFor maps an object to reconcile requests for the objects of list
// (in its namespace) whose index field holds its name.
func requestsFor(c client.Client, list client.ObjectList, index string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing objects that refer to a changed object", "index", index)
			return nil
		}
		var out []reconcile.Request
		_ = forEach(l, func(o client.Object) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		})
		return out
	}
}

func forEach(list client.ObjectList, fn func(client.Object)) error {
	switch l := list.(type) {
	case *notificationv1.ProviderList:
		for i := range l.Items {
			fn(&l.Items[i])
		}
	case *notificationv1.AlertList:
		for i := range l.Items {
			fn(&l.Items[i])
		}
	case *notificationv1.ReceiverList:
		for i := range l.Items {
			fn(&l.Items[i])
		}
	default:
		return errors.New("unsupported list")
	}
	return nil
}
