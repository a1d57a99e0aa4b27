package controller

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// FieldManager owns the status fields notification-controller writes.
var FieldManager = kinds.FieldManager(kinds.NotificationController)

// Field indexes the reconcilers and the receiver server look objects up by.
const (
	// ProviderRefIndex indexes Alerts by spec.providerRef.name.
	ProviderRefIndex = ".spec.providerRef.name"
)

// defaultRequeueDependency is how soon an object waiting for a Secret or
// Provider is looked at again when no watch event comes first, unless the
// reconciler's RequeueDependency (--requeue-dependency) says otherwise.
const defaultRequeueDependency = 10 * time.Second

// requeueDependency is d, or defaultRequeueDependency when d is zero.
func requeueDependency(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return defaultRequeueDependency
}

// skeleton is the reconcile skeleton of one notification kind: Ready
// speaks for the result, a failure is retried with controller-runtime's
// backoff (these kinds have no retryInterval), and the status — status(obj)
// — is applied whole as FieldManager when it changed.
func skeleton[T plumbreconcile.Object](c client.Client, m *metrics.Object, status func(T) any, ready func(T) string) *plumbreconcile.Controller[T] {
	return &plumbreconcile.Controller[T]{
		Condition:    meta.ReadyCondition,
		Metrics:      m,
		Succeeded:    ready,
		OwnedStatus:  status,
		Client:       c,
		FieldManager: FieldManager,
	}
}

// step is one of a notification reconciler's step methods, named.
type step[T any] struct {
	name string
	run  func(context.Context, T) error
}

// bind binds the steps to one object, for the skeleton.
func bind[T any](obj T, steps ...step[T]) []plumbreconcile.Step {
	out := make([]plumbreconcile.Step, len(steps))
	for i, s := range steps {
		out[i] = plumbreconcile.Step{Name: s.name, Run: func(ctx context.Context) error { return s.run(ctx, obj) }}
	}
	return out
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
		if err := apimeta.EachListItem(l, func(o runtime.Object) error {
			if co, ok := o.(client.Object); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
			}
			return nil
		}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reading objects that refer to a changed object", "index", index)
		}
		return out
	}
}
