package controller

import (
	"context"
	"errors"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/fight"
	"plumb.dev/sync-controller/internal/target"
)

// Syncer is what the reconcilers of both kinds share: the clients, the
// engine, the events and the settings of a sync, and what a sync keeps in
// memory between runs. Each reconciler has its own (its own engine and
// watcher, for its kind's ownership labels).
type Syncer struct {
	Client client.Client
	// Reader reads the object at the start of a reconcile straight from
	// the API server while a write of this controller to it may not be in
	// the cache yet: a sync must start from the status as stored (it
	// resumes and retries from it). Otherwise the reconcile reads the
	// cache (ownWrites); nil always reads the cache.
	Reader client.Reader
	// Shard is the instance's --watch-label-selector, nil for all: a
	// request may name another shard's object (a managed object's watch
	// event, an object that has just left the shard), and Reader reads
	// past the shard's cache, so the reconcile checks the shard key
	// itself (docs/design/sharding.md).
	Shard labels.Selector
	// Engine applies the objects; its watcher must be the one of the
	// reconciler's kind (engine.NewWatcherFor).
	Engine *engine.Engine
	Events *events.Recorder
	// Fetch bounds artifact downloads.
	Fetch fetch.Options
	// DependencyRequeue is how often an object waiting on another is
	// checked again.
	DependencyRequeue time.Duration
	// MaxDriftChanges bounds the changes carried by one DriftDetected event.
	MaxDriftChanges int
	// Clients keeps the clients that act for Kustomizations and
	// HelmReleases, in this cluster and in remote ones, shared by the
	// reconcilers (internal/target); nil is a cache of the reconciler's
	// own that allows, in this cluster, only the controller's identity.
	Clients *target.Clients
	// DefaultServiceAccount is the ServiceAccount, in its own namespace, that
	// an object without spec.serviceAccountName acts as
	// (--default-service-account); empty is the controller's own identity.
	// This and the next two are the settings of the reconciler's
	// target.Resolver.
	DefaultServiceAccount string
	// AllowLoopbackKubeConfigServers lets a spec.kubeConfig name a server
	// on a loopback address (--allow-loopback-kubeconfig-servers): in a
	// cluster that is sync-controller's own pod, so only tests and
	// single-machine setups want it.
	AllowLoopbackKubeConfigServers bool
	// RemoteClusterProxyFromEnvironment sends the remote clusters'
	// requests through the proxy of the environment variables
	// (HTTPS_PROXY, NO_PROXY: --remote-cluster-proxy-from-environment);
	// off, they go straight to the kubeconfig's server.
	RemoteClusterProxyFromEnvironment bool
	// NoCrossNamespaceRefs refuses dependsOn and healthChecks that name
	// another namespace (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// Fight sets fight detection: a field another manager keeps rewriting
	// is corrected with a backoff (--drift-fight-window); the zero value
	// turns it off.
	Fight fight.Options
	// PruneGuard holds the defaults of the prune guard (--max-prune-percent,
	// --prune-guard-min-objects); nil is DefaultPruneGuard.
	PruneGuard *PruneGuard

	// DeleteHookPoll is how often a deletion looks again at its running
	// delete hooks, or at pruned objects still going; 2s when zero.
	DeleteHookPoll time.Duration

	// Artifacts bounds the bytes of the artifacts the running syncs and
	// deletions hold, shared by the process's reconcilers; nil bounds
	// nothing.
	Artifacts *ArtifactBudget

	// Metrics records the sync's metrics; nil records none.
	Metrics *Metrics

	// Clock is the time sync windows are evaluated at (syncwindow.go);
	// nil is the wall clock. Tests set it.
	Clock func() time.Time

	// Renders are the renders read from render-controller's feed
	// (--render-feed-url, renderrecords.go); nil without the feed: a sync
	// then waits for render-controller's status write, as before.
	Renders *RenderRecords

	// LeaderElection says that the process runs with leader election: a
	// replica waiting for the lease reports ready (startupwatches.go).
	LeaderElection bool

	manifests   manifestCache
	writes      ownWrites
	renderWaits renderWaits
	fights      fight.Tracker
	// targets decides where and as whom each object's sync writes.
	targets *target.Resolver
}

// defaults fills in the settings left unset.
func (r *Syncer) defaults() {
	if r.DependencyRequeue == 0 {
		r.DependencyRequeue = 10 * time.Second
	}
	if r.MaxDriftChanges == 0 {
		r.MaxDriftChanges = 50
	}
	if r.DeleteHookPoll == 0 {
		r.DeleteHookPoll = defaultDeleteHookPoll
	}
	if r.Clients == nil {
		r.Clients = target.NewClients(nil, r.Client.Scheme(), nil)
	}
	r.targets = &target.Resolver{
		Clients: r.Clients, Local: r.Engine, Reader: r.reader(),
		DefaultServiceAccount:             r.DefaultServiceAccount,
		AllowLoopbackKubeConfigServers:    r.AllowLoopbackKubeConfigServers,
		RemoteClusterProxyFromEnvironment: r.RemoteClusterProxyFromEnvironment,
	}
}

// targetOf is what app says of where its sync writes.
func targetOf(app application) target.Request {
	spec := app.spec()
	return target.Request{Owner: app.owner(), ServiceAccountName: spec.ServiceAccountName, KubeConfig: spec.KubeConfig}
}

// stopRemotesWith stops every remote cluster's watcher when the manager
// stops: they run outside of it, each from the reconcile that created it.
func (r *Syncer) stopRemotesWith(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.Clients.StopAll()
		return nil
	}))
}

// newSkeleton is what both kinds' skeletons share: Ready speaks for the
// result, with succeeded's message; events; the retry interval, from the
// sync spec (the interval and the suspension the objects answer
// themselves: meta.Scheduled, meta.Suspendable); the finalizer. kind names
// the objects in the metrics.
func newSkeleton[T reconcile.Object](r *Syncer, kind string, succeeded func(T) string) *reconcile.Controller[T] {
	return &reconcile.Controller[T]{
		Condition:     meta.ReadyCondition,
		DefaultReason: kustomizev1.SyncFailedReason,
		Metrics:       r.Metrics.objectSet(kind),
		Succeeded:     succeeded,
		Events:        r.Events,
		RetryInterval: func(obj T) time.Duration { return appOf(obj).spec().RetryInterval },
		EventMessage: func(err error) (string, []events.Option) {
			msg, detail := eventOf(err)
			return msg, []events.Option{detail}
		},
		Finalizer: reconcile.Finalizer[T]{
			Client: r.Client, FieldManager: manage.FieldManager, Name: Finalizer,
			Finalize: func(ctx context.Context, obj T) error { return r.finalize(ctx, appOf(obj)) },
		},
	}
}

// reconcileObject is one reconcile of a Kustomization or a HelmRelease:
// the deletion (finalize), the finalizer, the suspension, then the sync's
// steps on the skeleton. finish, when set, runs once the run's sync
// operation is over, failed or through its health check (a HelmRelease's
// history), before the skeleton sums the run up.
func reconcileObject[T reconcile.Object](ctx context.Context, r *Syncer, req ctrl.Request, obj T, skel *reconcile.Controller[T], finish func(context.Context, *syncRun)) (ctrl.Result, error) {
	start := time.Now()
	if err := r.get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) && !r.cacheBehind(ctx, req.NamespacedName, obj) {
			r.renderWaits.forget(req.NamespacedName)
			r.Renders.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Shard != nil && !r.Shard.Matches(labels.Set(obj.GetLabels())) {
		// Another shard's, whose instance reconciles it.
		r.renderWaits.forget(req.NamespacedName)
		r.Renders.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	// A render from the feed not in status yet is the run's, as if
	// render-controller had written it; the run's status write carries it.
	storedRender := renderStatusOf(obj)
	var adoptedRec adoption
	adopted := false
	if obj.GetDeletionTimestamp().IsZero() {
		adoptedRec, adopted = r.Renders.adopt(req.NamespacedName, obj)
	}
	if wait := holdForRender(r, req.NamespacedName, obj, skel, start); wait > 0 {
		// render-controller's status update brings it back sooner.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	read := obj.GetResourceVersion()
	r.writes.writing(req.NamespacedName)
	ok, err := skel.Start(ctx, obj)
	if rv := obj.GetResourceVersion(); rv != read {
		r.writes.wrote(req.NamespacedName, rv) // the finalizer, set or released
	} else {
		r.writes.wrote(req.NamespacedName, "")
	}
	if !ok {
		var pending *deletionPending
		if errors.As(err, &pending) {
			// A deletion waiting on its hooks or its pruned objects: looked
			// at again later, never waited on in a worker.
			return ctrl.Result{RequeueAfter: pending.after}, nil
		}
		return ctrl.Result{}, err
	}

	if adopted && obj.GetResourceVersion() != read {
		// The finalizer's write answered with the object as stored,
		// without the render: that is the render status stored now, and
		// the record is put back on it, or not when it is stale or gone
		// since (the run then waits for render-controller). Without a
		// write obj still holds the record the run put in, which is not a
		// status the record could be compared with.
		storedRender = renderStatusOf(obj)
		adoptedRec, adopted = r.Renders.adopt(req.NamespacedName, obj)
	}
	s := newSyncRun(r, obj, start)
	if adopted {
		s.status.storedRender = storedRender
		s.status.adopted = adoptedRec
	}
	s.op.finish = finish
	sk := *skel
	sk.WriteStatus = func(ctx context.Context, _, _ T) error { return s.status.write(ctx, s.st) }
	sk.WriteProgress = func(ctx context.Context, _, _ T) error { return s.status.hold(ctx, s.st) }
	sk.EventOptions = func(T) []events.Option {
		return []events.Option{events.WithRevision(s.revision)}
	}
	sk.RetryDelay = func(T) (reconcile.RetryDecision, bool) { return s.retryDecision() }
	result, err := sk.Run(ctx, s.out.(T), s.steps()...)
	if s.releaseArtifact != nil {
		s.releaseArtifact()
	}
	if s.settled() {
		r.manifests.settle(req.NamespacedName, s.digest)
	}
	s.status.end()
	return s.fights.Requeue(result), err
}

// cacheBehind reports, when the cache has no object of key but the feed
// left a record of it, whether the API server has the object: the record
// came before the cache's news of the create. render-controller sees the
// create through its own watch, renders and offers, and in a fleet
// created at once this watch can be seconds behind it; a record dropped
// then is not offered again (the same render is sent once) and waits
// for render-controller's own write at the end of ten graces. Kept, it
// is taken at the reconcile the create's event brings. One read of the
// API server, only for an object the cache lacks and a record names.
func (r *Syncer) cacheBehind(ctx context.Context, key types.NamespacedName, obj client.Object) bool {
	if r.Reader == nil || !r.Renders.keeps(key) {
		return false
	}
	return r.Reader.Get(ctx, key, obj) == nil
}

// settled reports whether the run left its object Ready at its generation
// with nothing in progress: the sync operation is over, so no later run of
// it needs its plan.
func (s *syncRun) settled() bool {
	ready := conditions.Get(s.out, meta.ReadyCondition)
	return s.digest != "" && ready != nil && ready.Status == metav1.ConditionTrue &&
		ready.ObservedGeneration == s.obj.GetGeneration() && !conditions.IsTrue(s.out, meta.ReconcilingCondition)
}

// holdForRender returns how long a reconcile of a live, unsuspended object
// whose generation render-controller has not rendered yet ends at once,
// writing nothing (renderWaits); 0 when it goes on.
func holdForRender[T reconcile.Object](r *Syncer, key types.NamespacedName, obj T, skel *reconcile.Controller[T], now time.Time) time.Duration {
	if !obj.GetDeletionTimestamp().IsZero() || appOf(obj).spec().Suspend || !renderPending(appOf(obj)) {
		r.renderWaits.forget(key)
		return 0
	}
	return r.renderWaits.hold(key, now)
}

// dependsOnKeys are obj's keys in the dependsOn index: "<namespace>/<name>"
// of each of deps, a reference's namespace defaulting to obj's.
func dependsOnKeys(obj client.Object, deps []meta.DependencyReference) []string {
	keys := make([]string, 0, len(deps))
	for _, d := range deps {
		ns := d.Namespace
		if ns == "" {
			ns = obj.GetNamespace()
		}
		keys = append(keys, ns+"/"+d.Name)
	}
	return keys
}

// dependentsOf maps o to the objects of list's kind that depend on it.
func (r *Syncer) dependentsOf(ctx context.Context, o client.Object, list client.ObjectList) []ctrl.Request {
	if err := r.Client.List(ctx, list, client.MatchingFields{dependsOnIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	_ = apimeta.EachListItem(list, func(item runtime.Object) error {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(item.(client.Object))})
		return nil
	})
	return reqs
}

// reader is Reader, or Client when Reader is nil.
func (r *Syncer) reader() client.Reader {
	if r.Reader == nil {
		return r.Client
	}
	return r.Reader
}

// finalize runs the deletion of an object (deletehooks.go) and then
// releases the finalizer. A deletion that is not over yet — a delete hook
// running, pruned objects still going, a failed hook holding it — returns
// a *deletionPending and keeps the finalizer.
func (r *Syncer) finalize(ctx context.Context, app application) error {
	obj := app.object()
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if err := r.runDeletion(ctx, app); err != nil {
		return err
	}
	r.deleteReleaseRecords(ctx, app)
	key := client.ObjectKeyFromObject(obj)
	r.manifests.forget(key)
	r.fights.Forget(key)
	r.targets.Release(app.owner())
	if err := reconcile.SetFinalizer(ctx, r.Client, obj, ControllerName, Finalizer, false); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.Metrics.forget(app)
	return nil
}

// pruneOnDeletion deletes the inventory of a deleted object, acting as its
// ServiceAccount, with the propagation given (empty: background), and returns those of its objects that were still there
// (deleted now, or already being deleted): none once all are gone.
// Objects annotated plumb.dev/prune: disabled or
// helm.sh/resource-policy: keep, and objects no longer ours, are left and
// not counted.
func (r *Syncer) pruneOnDeletion(ctx context.Context, eng *engine.Engine, app application, inv *kustomizev1.Inventory, propagation metav1.DeletionPropagation) ([]object.ID, error) {
	var failed []error
	var remaining []object.ID
	for _, res := range eng.PruneWith(ctx, plan.Flatten(plan.PruneOrder(inventory.Objects(inv))), app.owner(), manage.OwnerDeleted, propagation) {
		if res.Err != nil {
			failed = append(failed, res.Err)
		}
		if res.Deleted {
			remaining = append(remaining, res.ID)
		}
	}
	return remaining, errors.Join(failed...)
}

// renderedChanged passes updates that change what render-controller
// produced. ownWrite, when set, says that an object's render is one this
// controller wrote itself, from the feed (RenderRecords): the update of
// that write is no news.
type renderedChanged struct {
	predicate.Funcs
	ownWrite func(reconcile.Object) bool
}

func (p renderedChanged) Update(e event.UpdateEvent) bool {
	oldObj, ok1 := e.ObjectOld.(reconcile.Object)
	newObj, ok2 := e.ObjectNew.(reconcile.Object)
	if !ok1 || !ok2 {
		return false
	}
	if digestOf(appOf(oldObj).rendered()) != digestOf(appOf(newObj).rendered()) {
		own := p.ownWrite != nil && p.ownWrite(newObj) && conditions.IsTrue(newObj, kustomizev1.RenderedCondition)
		return !own
	}
	if releaseActionOf(appOf(oldObj).rendered()) != releaseActionOf(appOf(newObj).rendered()) {
		// The same manifests rendered again for another action: the
		// upgrade render of an adopted release (helmadopt.go).
		return true
	}
	o, n := conditions.Get(oldObj, kustomizev1.RenderedCondition), conditions.Get(newObj, kustomizev1.RenderedCondition)
	if (o == nil) != (n == nil) {
		return true
	}
	return o != nil && (o.Status != n.Status || o.Reason != n.Reason || o.ObservedGeneration != n.ObservedGeneration || o.Message != n.Message)
}

// becameReady passes updates where an object turned Ready.
type becameReady struct{ predicate.Funcs }

func (becameReady) Update(e event.UpdateEvent) bool {
	oldObj, ok1 := e.ObjectOld.(reconcile.Object)
	newObj, ok2 := e.ObjectNew.(reconcile.Object)
	return ok1 && ok2 && !conditions.IsReady(oldObj) && conditions.IsReady(newObj)
}

// Create, Delete and Generic events of the dependency watch are not needed:
// a dependency that appears is not Ready yet.
func (becameReady) Create(event.CreateEvent) bool { return false }
