package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// ControllerName names sync-controller in events and as its status field manager.
const ControllerName = "sync-controller"

// Finalizer lets sync-controller prune a deleted Kustomization's objects.
const Finalizer = "sync.plumb.dev/finalizer"

// dependsOnIndex indexes Kustomizations by the ones they depend on.
const dependsOnIndex = ".spec.dependsOn"

// KustomizationReconciler makes the cluster equal to a Kustomization's
// rendered manifests.
type KustomizationReconciler struct {
	Client client.Client
	// Reader reads the Kustomization at the start of a reconcile straight
	// from the API server: the watch cache can lag behind the status this
	// controller wrote a moment before, and a sync must start from the
	// status as stored (it resumes and retries from it). One GET per
	// reconcile; nil falls back to Client.
	Reader client.Reader
	Engine *engine.Engine
	Events *events.Recorder
	// Fetch bounds artifact downloads.
	Fetch fetch.Options
	// DependencyRequeue is how often a Kustomization waiting on another is
	// checked again.
	DependencyRequeue time.Duration
	// MaxDriftChanges bounds the changes carried by one DriftDetected event.
	MaxDriftChanges int
	// Impersonator gives the clients that act as Kustomizations'
	// ServiceAccounts; nil allows only the controller's own identity.
	Impersonator *Impersonator
	// DefaultServiceAccount is the ServiceAccount, in its own namespace, that
	// a Kustomization without spec.serviceAccountName acts as
	// (--default-service-account); empty is the controller's own identity.
	DefaultServiceAccount string
	// NoCrossNamespaceRefs refuses dependsOn and healthChecks that name
	// another namespace (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// Fight sets fight detection: a field another manager keeps rewriting
	// is corrected with a backoff (--drift-fight-window); the zero value
	// turns it off.
	Fight FightOptions
	// PruneGuard holds the defaults of the prune guard (--max-prune-percent,
	// --prune-guard-min-objects); nil is DefaultPruneGuard.
	PruneGuard *PruneGuard

	// Metrics records the sync's metrics; nil records none.
	Metrics *Metrics

	manifests    manifestCache
	fightTracker fightTracker
	skeletonOnce sync.Once
	sk           *reconcile.Controller[*kustomizev1.Kustomization]
}

// SetupWithManager registers the reconciler: it runs on spec changes, reconcile
// requests, a new rendered artifact, a dependency becoming Ready, and foreign
// writes to managed objects (through the engine's watcher).
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.DependencyRequeue == 0 {
		r.DependencyRequeue = 10 * time.Second
	}
	if r.MaxDriftChanges == 0 {
		r.MaxDriftChanges = 50
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &kustomizev1.Kustomization{}, dependsOnIndex, func(o client.Object) []string {
		ks := o.(*kustomizev1.Kustomization)
		keys := make([]string, 0, len(ks.Spec.DependsOn))
		for _, d := range ks.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = ks.Namespace
			}
			keys = append(keys, ns+"/"+d.Name)
		}
		return keys
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, reconcile.RequestedPredicate{}, renderedChanged{}, confirmPruneChanged{}))).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(becameReady{})).
		WatchesRawSource(r.Engine.Watcher().Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// skeleton is this controller's use of pkg/reconcile, shared by every
// run: Ready speaks for the result; a failure is retried after
// spec.retryInterval. Each run copies it and sets its own status writer,
// which writes only what changed since the run's last write.
func (r *KustomizationReconciler) skeleton() *reconcile.Controller[*kustomizev1.Kustomization] {
	r.skeletonOnce.Do(func() {
		r.sk = &reconcile.Controller[*kustomizev1.Kustomization]{
			Condition:     meta.ReadyCondition,
			DefaultReason: kustomizev1.SyncFailedReason,
			Events:        r.Events,
			Metrics:       r.Metrics.objectSet(),
			Succeeded: func(ks *kustomizev1.Kustomization) string {
				return "Applied revision: " + ks.Status.LastAppliedRevision
			},
			Interval:      func(ks *kustomizev1.Kustomization) time.Duration { return ks.Spec.Interval.Duration },
			RetryInterval: func(ks *kustomizev1.Kustomization) time.Duration { return ks.GetRetryInterval().Duration },
			EventMessage: func(err error) (string, []events.Option) {
				msg, detail := eventOf(err)
				return msg, []events.Option{detail}
			},
			Suspended: func(ks *kustomizev1.Kustomization) bool { return ks.Spec.Suspend },
		}
	})
	return r.sk
}

// Reconcile runs one sync of a Kustomization (syncRun.steps) and writes
// sync-controller's part of its status.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	obj := &kustomizev1.Kustomization{}
	if err := r.reader().Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		if err := reconcile.SetFinalizer(ctx, r.Client, obj, ControllerName, Finalizer, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	if obj.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, skipping")
		r.skeleton().Record(obj)
		return ctrl.Result{}, nil
	}

	s := newSyncRun(r, obj, start)
	sk := *r.skeleton()
	sk.WriteStatus = func(ctx context.Context, _, _ *kustomizev1.Kustomization) error { return s.writeStatus(ctx) }
	sk.EventOptions = func(*kustomizev1.Kustomization) []events.Option {
		return []events.Option{events.WithRevision(s.revision)}
	}
	result, err := sk.Run(ctx, s.out, s.steps()...)
	return s.fightRequeue(result), err
}

// reader is Reader, or Client when Reader is nil.
func (r *KustomizationReconciler) reader() client.Reader {
	if r.Reader == nil {
		return r.Client
	}
	return r.Reader
}

// finalize prunes the inventory when spec.prune is set (orphans it
// otherwise) and releases the finalizer. The prune acts as the
// Kustomization's ServiceAccount, like every sync; when that ServiceAccount
// no longer exists (its namespace is being deleted, typically) nothing can
// be pruned in its name, and the objects are left, with a warning event,
// as Flux does.
func (r *KustomizationReconciler) finalize(ctx context.Context, obj *kustomizev1.Kustomization) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	if obj.Spec.Prune && !obj.Spec.Suspend && obj.Status.Inventory != nil {
		if err := r.pruneOnDeletion(ctx, obj); err != nil {
			r.Events.Record(obj, events.SeverityError, kustomizev1.PruneFailedReason, "pruning on deletion failed: "+err.Error())
			return ctrl.Result{}, err
		}
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	r.manifests.forget(key)
	r.fightTracker.forget(key)
	if r.Impersonator != nil {
		r.Impersonator.Release(key)
	}
	if err := reconcile.SetFinalizer(ctx, r.Client, obj, ControllerName, Finalizer, false); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	r.Metrics.forget(obj)
	return ctrl.Result{}, nil
}

// pruneOnDeletion deletes the inventory of a deleted Kustomization, acting
// as its ServiceAccount.
func (r *KustomizationReconciler) pruneOnDeletion(ctx context.Context, obj *kustomizev1.Kustomization) error {
	sa, gone, err := r.serviceAccountGone(ctx, obj)
	if err != nil {
		return fmt.Errorf("reading ServiceAccount %s: %w", sa, err)
	}
	if gone {
		r.Events.Record(obj, events.SeverityError, kustomizev1.PruneFailedReason, fmt.Sprintf(
			"ServiceAccount %s no longer exists: the %d object(s) of the inventory are left in place", sa, len(obj.Status.Inventory.Entries)))
		return nil
	}
	eng, err := r.engineFor(obj)
	if err != nil {
		return err
	}
	owner := manage.Owner{Namespace: obj.Namespace, Name: obj.Name}
	var failed []error
	for _, res := range eng.Prune(ctx, plan.Flatten(plan.PruneOrder(inventory.Objects(obj.Status.Inventory))), owner) {
		if res.Err != nil {
			failed = append(failed, res.Err)
		}
	}
	return errors.Join(failed...)
}

// dependents maps a Kustomization to the ones that depend on it.
func (r *KustomizationReconciler) dependents(ctx context.Context, o client.Object) []ctrl.Request {
	var list kustomizev1.KustomizationList
	if err := r.Client.List(ctx, &list, client.MatchingFields{dependsOnIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for _, ks := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}})
	}
	return reqs
}

// renderedChanged passes updates that change what render-controller produced.
type renderedChanged struct{ predicate.Funcs }

func (renderedChanged) Update(e event.UpdateEvent) bool {
	oldKs, ok1 := e.ObjectOld.(*kustomizev1.Kustomization)
	newKs, ok2 := e.ObjectNew.(*kustomizev1.Kustomization)
	if !ok1 || !ok2 {
		return false
	}
	if digestOf(oldKs.Status.RenderedArtifact) != digestOf(newKs.Status.RenderedArtifact) {
		return true
	}
	o, n := conditions.Get(oldKs, kustomizev1.RenderedCondition), conditions.Get(newKs, kustomizev1.RenderedCondition)
	if (o == nil) != (n == nil) {
		return true
	}
	return o != nil && (o.Status != n.Status || o.Reason != n.Reason || o.ObservedGeneration != n.ObservedGeneration || o.Message != n.Message)
}

// becameReady passes updates where a Kustomization turned Ready.
type becameReady struct{ predicate.Funcs }

func (becameReady) Update(e event.UpdateEvent) bool {
	oldKs, ok1 := e.ObjectOld.(*kustomizev1.Kustomization)
	newKs, ok2 := e.ObjectNew.(*kustomizev1.Kustomization)
	return ok1 && ok2 && !conditions.IsReady(oldKs) && conditions.IsReady(newKs)
}

func digestOf(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Digest
}

// Create, Delete and Generic events of the dependency watch are not needed:
// a dependency that appears is not Ready yet.
func (becameReady) Create(event.CreateEvent) bool { return false }
