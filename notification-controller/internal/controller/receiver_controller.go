package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/receiver"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// ReceiverReconciler resolves a Receiver's token and publishes its webhook
// path in status.webhookPath.
type ReceiverReconciler struct {
	client.Client
	// Reader reads Secrets (uncached, by name).
	Reader client.Reader
	// NoCrossNamespaceRefs refuses resources in another namespace.
	NoCrossNamespaceRefs bool
	// SecretRefreshInterval is how often the token is read again.
	SecretRefreshInterval time.Duration

	// RequeueDependency is how soon an object waiting for a Secret or
	// Provider is looked at again (--requeue-dependency); zero is 10s.
	RequeueDependency time.Duration

	// Metrics records the per-object metrics; nil records none.
	Metrics *Metrics

	sk *plumbreconcile.Controller[*notificationv1.Receiver]
}

// SetupWithManager registers the reconciler. notification-controller may
// get Secrets but not watch them: a Receiver is reconciled again every
// SecretRefreshInterval, and at once when it changes or is annotated with
// reconcile.plumb.dev/requestedAt.
func (r *ReceiverReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	return ctrl.NewControllerManagedBy(mgr).
		Named("receiver").
		For(&notificationv1.Receiver{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps resources, token, suspend and patches the status.
func (r *ReceiverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Receiver{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, readFailed(r.Metrics.receivers(), req, err)
	}
	result, err := r.sk.Run(ctx, obj, bind(obj,
		step[*notificationv1.Receiver]{"resources", r.reconcileResources},
		step[*notificationv1.Receiver]{"token", r.reconcileToken},
		step[*notificationv1.Receiver]{"suspend", r.reconcileSuspend},
	)...)
	return refreshSecret(result, err, r.SecretRefreshInterval), err
}

func (r *ReceiverReconciler) newSkeleton() *plumbreconcile.Controller[*notificationv1.Receiver] {
	return skeleton(r.Client, r.Metrics.receivers(),
		func(rcv *notificationv1.Receiver) any { return &rcv.Status },
		func(rcv *notificationv1.Receiver) string { return "receiving webhooks on " + rcv.Status.WebhookPath })
}

// reconcileResources checks every resource is of a kind a webhook can
// reconcile and, under --no-cross-namespace-refs, in the Receiver's
// namespace, and that spec.events is set only on a type that can filter
// (the CRD refuses it too, but not on objects stored before), that
// spec.resourceFilter compiles to a bool, and that secretRef and
// oidcProviders fit the type and every oidcProviders expression compiles
// (receiver.CheckOIDC). Sets Stalled
// and Ready=False (InvalidSpec, or CrossNamespaceRef) otherwise.
func (r *ReceiverReconciler) reconcileResources(_ context.Context, obj *notificationv1.Receiver) error {
	for i, ref := range obj.Spec.Resources {
		if !receiver.SupportedKind(ref.Kind) {
			return plumbreconcile.Stalled(meta.InvalidSpecReason,
				fmt.Errorf("spec.resources[%d]: a webhook cannot request a reconcile of kind %s (only GitRepository, OCIRepository, HelmRepository, HelmChart, Bucket, ArtifactGenerator, Kustomization, HelmRelease, ImageRepository and ObjectSet)", i, ref.Kind))
		}
		if r.NoCrossNamespaceRefs && ref.Namespace != "" && ref.Namespace != obj.Namespace {
			return plumbreconcile.Stalled(notificationv1.CrossNamespaceRefReason,
				fmt.Errorf("cross-namespace references are not allowed: spec.resources[%d] names namespace %q, outside %s", i, ref.Namespace, obj.Namespace))
		}
	}
	if len(obj.Spec.Events) > 0 && !receiver.CanFilter(obj.Spec.Type) {
		return plumbreconcile.Stalled(meta.InvalidSpecReason,
			fmt.Errorf("spec.events: a %s receiver cannot tell event types apart; remove spec.events", obj.Spec.Type))
	}
	if f := obj.Spec.ResourceFilter; f != "" {
		if _, err := receiver.CompileFilter(f, obj.Spec.Type); err != nil {
			return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
		}
	}
	if err := receiver.CheckOIDC(obj); err != nil {
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	return nil
}

// reconcileToken reads the token (and for gcr the email and audience) and
// writes status.webhookPath from the token (generic-oidc has none: its
// path hashes its name and namespace only).
// Sets Ready=False (SecretNotReady) and Reconciling, naming the Secret or
// key, when it cannot, or when the token is shorter than
// receiver.MinTokenBytes (the path is then removed); the next refresh
// reads the Secret again.
func (r *ReceiverReconciler) reconcileToken(ctx context.Context, obj *notificationv1.Receiver) error {
	cred, err := receiver.ReadCredentials(ctx, r.Reader, obj)
	if err != nil {
		var short *receiver.ShortTokenError
		if errors.As(err, &short) {
			obj.Status.WebhookPath = ""
		}
		return plumbreconcile.Waiting(notificationv1.SecretNotReadyReason, min(requeueDependency(r.RequeueDependency), r.SecretRefreshInterval), err)
	}
	obj.Status.WebhookPath = receiver.WebhookPath(cred.Token, obj.Name, obj.Namespace)
	return nil
}

// reconcileSuspend marks a suspended Receiver Ready=False (Suspended); its
// webhook path stays, and calls to it are answered 503.
func (r *ReceiverReconciler) reconcileSuspend(_ context.Context, obj *notificationv1.Receiver) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}
