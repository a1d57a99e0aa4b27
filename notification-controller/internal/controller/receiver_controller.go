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
	"plumb.dev/notification-controller/internal/receiver"
	"plumb.dev/notification-controller/internal/secret"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// ReceiverReconciler resolves a Receiver's token and publishes its webhook
// path in status.webhookPath.
type ReceiverReconciler struct {
	client.Client
	// Reader reads Secrets (uncached).
	Reader client.Reader
}

// SetupWithManager registers the reconciler and the index the receiver
// server looks calls up by; a change to a Receiver's Secret (a rotated
// token) reconciles the Receiver.
func (r *ReceiverReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(context.Background(), &notificationv1.Receiver{}, SecretRefIndex,
		func(o client.Object) []string { return []string{o.(*notificationv1.Receiver).Spec.SecretRef.Name} }); err != nil {
		return err
	}
	if err := indexer.IndexField(context.Background(), &notificationv1.Receiver{}, receiver.WebhookPathIndex,
		func(o client.Object) []string {
			if p := o.(*notificationv1.Receiver).Status.WebhookPath; p != "" {
				return []string{p}
			}
			return nil
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("receiver").
		For(&notificationv1.Receiver{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{},
			handler.EnqueueRequestsFromMapFunc(requestsFor(r.Client, &notificationv1.ReceiverList{}, SecretRefIndex)),
			builder.OnlyMetadata).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps resources, token, suspend and patches the status.
func (r *ReceiverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Receiver{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return run(ctx, r.Client, obj, receiverObj{obj}, []step[*notificationv1.Receiver]{
		{"resources", r.reconcileResources},
		{"token", r.reconcileToken},
		{"suspend", r.reconcileSuspend},
	}, func() string { return "receiving webhooks on " + obj.Status.WebhookPath })
}

// reconcileResources checks every resource is of a kind a webhook can
// reconcile. Sets Stalled and Ready=False (InvalidSpec) otherwise.
func (r *ReceiverReconciler) reconcileResources(_ context.Context, obj *notificationv1.Receiver) error {
	for i, ref := range obj.Spec.Resources {
		if !receiver.SupportedKind(ref.Kind) {
			return plumbreconcile.Stalled(meta.InvalidSpecReason,
				fmt.Errorf("spec.resources[%d]: a webhook cannot request a reconcile of kind %s (only GitRepository and Kustomization)", i, ref.Kind))
		}
	}
	return nil
}

// reconcileToken reads the token and writes status.webhookPath from it.
// Sets Ready=False (SecretNotReady) and Reconciling, naming the Secret or
// key, when it cannot; the Secret's next change reconciles again.
func (r *ReceiverReconciler) reconcileToken(ctx context.Context, obj *notificationv1.Receiver) error {
	token, err := secret.Token(ctx, r.Reader, obj.Namespace, obj.Spec.SecretRef.Name)
	if err != nil {
		return plumbreconcile.Waiting(SecretNotReadyReason, retryInterval, err)
	}
	obj.Status.WebhookPath = receiver.WebhookPath(token, obj.Name, obj.Namespace)
	return nil
}

// reconcileSuspend marks a suspended Receiver Ready=False (Suspended); its
// webhook path stays, and calls to it are answered 503.
func (r *ReceiverReconciler) reconcileSuspend(_ context.Context, obj *notificationv1.Receiver) error {
	if obj.Spec.Suspend {
		return errSuspended
	}
	return nil
}
