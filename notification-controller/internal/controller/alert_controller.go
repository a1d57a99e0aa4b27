package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/alerttext"
	"plumb.dev/notification-controller/internal/dispatch"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// AlertReconciler checks that an Alert can route events: its expressions
// compile and its Provider is Ready.
type AlertReconciler struct {
	client.Client
	// NoCrossNamespaceRefs refuses event sources in another namespace.
	NoCrossNamespaceRefs bool

	// RequeueDependency is how soon an object waiting for a Secret or
	// Provider is looked at again (--requeue-dependency); zero is 10s.
	RequeueDependency time.Duration

	// Metrics records the per-object metrics; nil records none.
	Metrics *Metrics

	sk *plumbreconcile.Controller[*notificationv1.Alert]
}

// SetupWithManager registers the reconciler; a change to a Provider's
// status reconciles the Alerts that use it, and a new
// reconcile.plumb.dev/requestedAt value (plumb reconcile alert) the Alert.
func (r *AlertReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &notificationv1.Alert{}, ProviderRefIndex,
		func(o client.Object) []string {
			return []string{o.(*notificationv1.Alert).Spec.ProviderRef.Name}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("alert").
		For(&notificationv1.Alert{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		Watches(&notificationv1.Provider{},
			handler.EnqueueRequestsFromMapFunc(requestsFor(r.Client, &notificationv1.AlertList{}, ProviderRefIndex))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps suspend, sources, expressions, templates, provider and
// patches the status.
func (r *AlertReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Alert{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, readFailed(r.Metrics.alerts(), req, err)
	}
	return r.sk.Run(ctx, obj, bind(obj,
		step[*notificationv1.Alert]{"suspend", r.reconcileSuspend},
		step[*notificationv1.Alert]{"sources", r.reconcileSources},
		step[*notificationv1.Alert]{"expressions", r.reconcileExpressions},
		step[*notificationv1.Alert]{"templates", r.reconcileTemplates},
		step[*notificationv1.Alert]{"provider", r.reconcileProvider},
	)...)
}

func (r *AlertReconciler) newSkeleton() *plumbreconcile.Controller[*notificationv1.Alert] {
	return skeleton(r.Client, r.Metrics.alerts(),
		func(a *notificationv1.Alert) any { return &a.Status },
		func(a *notificationv1.Alert) string {
			return fmt.Sprintf("routing events to provider %s", a.Spec.ProviderRef.Name)
		})
}

// reconcileSuspend stops at a suspended Alert: Ready=False (Suspended).
func (r *AlertReconciler) reconcileSuspend(_ context.Context, obj *notificationv1.Alert) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}

// reconcileSources refuses, under --no-cross-namespace-refs, an event
// source in another namespace than the Alert's, "*" included. Sets Stalled
// and Ready=False (CrossNamespaceRef). The dispatcher does not match such a
// source either, whatever the Alert's status says.
func (r *AlertReconciler) reconcileSources(_ context.Context, obj *notificationv1.Alert) error {
	if !r.NoCrossNamespaceRefs {
		return nil
	}
	for i, src := range obj.Spec.EventSources {
		if src.Namespace != "" && src.Namespace != obj.Namespace {
			return plumbreconcile.Stalled(notificationv1.CrossNamespaceRefReason,
				fmt.Errorf("cross-namespace references are not allowed: spec.eventSources[%d] names namespace %q, outside %s", i, src.Namespace, obj.Namespace))
		}
	}
	return nil
}

// reconcileExpressions compiles the inclusion and exclusion lists. Sets
// Stalled and Ready=False (InvalidSpec) naming the bad expression.
func (r *AlertReconciler) reconcileExpressions(_ context.Context, obj *notificationv1.Alert) error {
	if err := dispatch.ValidateAlert(obj); err != nil {
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	return nil
}

// reconcileTemplates parses spec.summary and spec.messageTemplate. Sets
// Stalled and Ready=False (InvalidTemplate) naming the field and the
// error; the dispatcher sends an event whose template fails at execution
// with the untemplated text.
func (r *AlertReconciler) reconcileTemplates(_ context.Context, obj *notificationv1.Alert) error {
	if _, err := alerttext.Parse(obj); err != nil {
		return plumbreconcile.Stalled(notificationv1.InvalidTemplateReason, err)
	}
	return nil
}

// reconcileProvider checks the Provider exists and is Ready. Sets
// Ready=False (ProviderNotReady) and Reconciling otherwise; the Provider's
// next change reconciles the Alert again.
func (r *AlertReconciler) reconcileProvider(ctx context.Context, obj *notificationv1.Alert) error {
	var p notificationv1.Provider
	name := obj.Spec.ProviderRef.Name
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return plumbreconcile.Waiting(notificationv1.ProviderNotReadyReason, requeueDependency(r.RequeueDependency), fmt.Errorf("provider %s not found", name))
		}
		return err
	}
	if !conditions.IsReady(&p) {
		msg := conditions.GetMessage(&p, meta.ReadyCondition)
		if msg == "" {
			msg = "not reconciled yet"
		}
		return plumbreconcile.Waiting(notificationv1.ProviderNotReadyReason, requeueDependency(r.RequeueDependency), fmt.Errorf("provider %s is not ready: %s", name, msg))
	}
	return nil
}
