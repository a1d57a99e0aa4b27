package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/notifier"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// ProviderReconciler checks that a Provider can deliver: its Secret and
// keys exist and its address is a URL of the right scheme.
type ProviderReconciler struct {
	client.Client
	// Reader reads Secrets (uncached).
	Reader client.Reader
}

// SetupWithManager registers the reconciler; a change to a Provider's
// Secret reconciles the Provider.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &notificationv1.Provider{}, SecretRefIndex,
		func(o client.Object) []string {
			if ref := o.(*notificationv1.Provider).Spec.SecretRef; ref != nil {
				return []string{ref.Name}
			}
			return nil
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("provider").
		For(&notificationv1.Provider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{},
			handler.EnqueueRequestsFromMapFunc(requestsFor(r.Client, &notificationv1.ProviderList{}, SecretRefIndex)),
			builder.OnlyMetadata).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps suspend, config and patches the status.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Provider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return run(ctx, r.Client, obj, providerObj{obj}, []step[*notificationv1.Provider]{
		{"suspend", r.reconcileSuspend},
		{"config", r.reconcileConfig},
	}, func() string { return fmt.Sprintf("%s provider is ready", obj.Spec.Type) })
}

// reconcileSuspend stops at a suspended Provider: Ready=False (Suspended).
func (r *ProviderReconciler) reconcileSuspend(_ context.Context, obj *notificationv1.Provider) error {
	if obj.Spec.Suspend {
		return errSuspended
	}
	return nil
}

// reconcileConfig resolves the address and token. Sets Ready=False
// (SecretNotReady) and Reconciling when the Secret or a key is missing,
// naming it; Stalled (InvalidSpec) when the spec alone is wrong.
func (r *ProviderReconciler) reconcileConfig(ctx context.Context, obj *notificationv1.Provider) error {
	cfg, err := notifier.ConfigFor(ctx, r.Reader, obj)
	if err != nil {
		if obj.Spec.SecretRef != nil {
			return plumbreconcile.Waiting(SecretNotReadyReason, retryInterval, err)
		}
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	if _, err := notifier.New(cfg); err != nil {
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	return nil
}
