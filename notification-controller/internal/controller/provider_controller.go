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
	"plumb.dev/notification-controller/internal/notifier"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// ProviderReconciler checks that a Provider can deliver: its Secrets and
// keys exist (its own, its certSecretRef's, its proxySecretRef's), its
// address is a URL of the right scheme and it and its proxy are allowed
// by the address policy, and its credentials do not travel in clear text unless
// spec.insecure says so.
type ProviderReconciler struct {
	client.Client
	// Reader reads Secrets (uncached, by name).
	Reader client.Reader
	// Policy is the dispatcher's address policy, applied here to literal
	// IP addresses so a refused one is reported before any delivery.
	Policy notifier.AddressPolicy
	// MaxTimeout is --max-provider-timeout; a longer spec.timeout is
	// reported in the Ready message.
	MaxTimeout time.Duration
	// SecretRefreshInterval is how often the Secret is read again.
	SecretRefreshInterval time.Duration

	// RequeueDependency is how soon an object waiting for a Secret or
	// Provider is looked at again (--requeue-dependency); zero is 10s.
	RequeueDependency time.Duration

	// Metrics records the per-object metrics; nil records none.
	Metrics *Metrics

	sk *plumbreconcile.Controller[*notificationv1.Provider]
}

// SetupWithManager registers the reconciler. notification-controller may
// get Secrets but not watch them: a Provider with a Secret is reconciled
// again every SecretRefreshInterval, and at once when it changes or is
// annotated with reconcile.plumb.dev/requestedAt.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	return ctrl.NewControllerManagedBy(mgr).
		Named("provider").
		For(&notificationv1.Provider{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps suspend, config and patches the status.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Provider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, readFailed(r.Metrics.providers(), req, err)
	}
	result, err := r.sk.Run(ctx, obj, bind(obj,
		step[*notificationv1.Provider]{"suspend", r.reconcileSuspend},
		step[*notificationv1.Provider]{"config", r.reconcileConfig},
	)...)
	if hasSecrets(obj) {
		result = refreshSecret(result, err, r.SecretRefreshInterval)
	}
	return result, err
}

// hasSecrets reports whether the Provider reads a Secret: its own, its
// certificates' or its proxy's.
func hasSecrets(p *notificationv1.Provider) bool {
	return p.Spec.SecretRef != nil || p.Spec.CertSecretRef != nil || p.Spec.ProxySecretRef != nil
}

func (r *ProviderReconciler) newSkeleton() *plumbreconcile.Controller[*notificationv1.Provider] {
	return skeleton(r.Client, r.Metrics.providers(),
		func(p *notificationv1.Provider) any { return &p.Status }, r.readyMessage)
}

func (r *ProviderReconciler) readyMessage(obj *notificationv1.Provider) string {
	msg := fmt.Sprintf("%s provider is ready", obj.Spec.Type)
	if t := obj.GetTimeout().Duration; r.MaxTimeout > 0 && t > r.MaxTimeout {
		msg += fmt.Sprintf("; spec.timeout %s is above --max-provider-timeout, deliveries stop after %s", t, r.MaxTimeout)
	}
	return msg
}

// reconcileSuspend stops at a suspended Provider: Ready=False (Suspended).
func (r *ProviderReconciler) reconcileSuspend(_ context.Context, obj *notificationv1.Provider) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}

// reconcileConfig resolves the address and token. Sets Ready=False
// (SecretNotReady) and Reconciling when the Secret or a key is missing,
// naming it; Stalled with InsecureConnectionsDisallowed when credentials
// would go over plain http:// without spec.insecure, with AddressRefused
// when the address is an IP the address policy refuses, and with
// InvalidSpec when the spec alone is wrong.
func (r *ProviderReconciler) reconcileConfig(ctx context.Context, obj *notificationv1.Provider) error {
	cfg, err := notifier.ConfigFor(ctx, r.Reader, obj)
	var insecure *notifier.InsecureError
	switch {
	case errors.As(err, &insecure):
		return plumbreconcile.Stalled(meta.InsecureConnectionsDisallowedReason, err)
	case err != nil && hasSecrets(obj):
		return plumbreconcile.Waiting(notificationv1.SecretNotReadyReason, min(requeueDependency(r.RequeueDependency), r.SecretRefreshInterval), err)
	case err != nil:
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	if _, err := notifier.New(cfg); err != nil {
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	addresses := []string{cfg.Address}
	if cfg.Proxy != nil {
		// Deliveries connect to the proxy: the policy judges its address.
		addresses = append(addresses, cfg.Proxy.String())
	}
	for _, address := range addresses {
		if ip, ok := notifier.LiteralAddress(address); ok {
			if err := r.Policy.Check(ip); err != nil {
				return plumbreconcile.Stalled(notificationv1.AddressRefusedReason, err)
			}
		}
	}
	return nil
}
