package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderfeed"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/render-controller/internal/rendered"
	"plumb.dev/render-controller/internal/sourcetree"
)

// ControllerName signs events and names the controller.
const ControllerName = kinds.RenderController

// FieldManager owns status.renderedArtifact and the Rendered condition
// (server-side apply on the status subresource).
var FieldManager = kinds.FieldManager(kinds.RenderController)

// sourceIndexKey indexes Kustomizations by "<kind>/<namespace>/<name>" of
// the source they reference.
const sourceIndexKey = ".spec.sourceRef"

// KustomizationReconciler renders Kustomizations into manifests artifacts.
type KustomizationReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object

	*renderKind[*kustomizev1.Kustomization]

	// HTTPClient downloads source artifacts; nil is a client with a 5
	// minute timeout on a transport of its own.
	HTTPClient *http.Client
	// DownloadAttempts and DownloadBackoff tune the retries of a download
	// (pkg/fetch defaults when zero).
	DownloadAttempts int
	DownloadBackoff  time.Duration
	// Limits bound the source archive (--max-artifact-size,
	// --max-extracted-size, --max-files).
	Limits artifact.Limits
	// RenderLimits bound each build (--max-render-input, --max-yaml-nodes,
	// --max-yaml-documents, --max-rendered-size); zero fields take
	// pkg/render's defaults.
	RenderLimits render.Limits
	// RenderTimeout bounds each build (--render-timeout); zero means
	// DefaultRenderTimeout.
	RenderTimeout time.Duration
	// NoCrossNamespaceRefs refuses a sourceRef into another namespace.
	NoCrossNamespaceRefs bool
	// StrictSubstitution makes an undefined ${var} without default an error.
	StrictSubstitution bool
	// DependencyRequeue is the wait while the source has no artifact; the
	// GitRepository watch usually comes first. Zero means 10s.
	DependencyRequeue time.Duration
	// SourceTrees holds the extracted source trees, shared by the
	// Kustomizations of one revision; nil is a cache with the defaults in
	// TmpDir.
	SourceTrees *sourcetree.Cache
	// TmpDir holds that cache when SourceTrees is nil; "" is os.TempDir().
	TmpDir string

	// Renderer runs the builds in worker processes; nil is a pool of its
	// own with pkg/renderworker's defaults (tests).
	Renderer *renderworker.Pool
	// Feed, when set, is the render feed of the artifact server
	// (pkg/renderfeed): a good render is offered there while a
	// sync-controller is subscribed, rather than written to status
	// (renderfeed.go); nil writes every render to status.
	Feed *renderfeed.Feed
	// RenderGrace is how long an offered render waits for sync-controller
	// before render-controller writes it; zero is DefaultRenderGrace.
	RenderGrace time.Duration

	// PluginDir holds the config-management plugins' sockets
	// (--plugin-dir, plugin.go); "" is no plugins.
	PluginDir string

	// trees is SourceTrees, or the cache SetupWithManager made in TmpDir.
	trees *sourcetree.Cache

	// cache maps an object to the key of its last successful render, and
	// uids to the UID of the object last reconciled under that name.
	cacheMu sync.Mutex
	cache   map[types.NamespacedName]string
	uids    map[types.NamespacedName]types.UID
	// written is the render status this reconciler last wrote to each
	// object itself, which a render offered on the feed names as one it
	// replaces (renderfeed.go).
	written map[types.NamespacedName]writtenRender
}

// SetupWithManager registers the reconciler: Kustomizations on creation,
// spec change, requestedAt annotation and deletion, every Kustomization
// that references a source whose artifact changed, and, once at start, the
// Kustomizations gone while render-controller was down (sweepSource).
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := r.setUp(); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &kustomizev1.Kustomization{}, sourceIndexKey, sourceIndexValues); err != nil {
		return fmt.Errorf("indexing Kustomizations by source: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("kustomization-render").
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
			syncFinalizerReleased{},
			pendingUpdated{feed: r.Feed},
		)))
	for _, kind := range sourceKinds {
		b = b.Watches(kind.New(),
			handler.EnqueueRequestsFromMapFunc(r.kustomizationsOf(kind.GVK.Kind)),
			builder.WithPredicates(artifactChanged{}))
	}
	return b.WatchesRawSource(r.sweepSource(mgr.GetCache())).WatchesRawSource(r.feedSource()).WithOptions(opts).Complete(r)
}

// kustomizationsOf maps a source object of kind to the Kustomizations
// using it.
func (r *KustomizationReconciler) kustomizationsOf(kind string) handler.MapFunc {
	return plumbreconcile.Referrers(r.Client, func() client.ObjectList { return &kustomizev1.KustomizationList{} },
		sourceIndexKey, func(o client.Object) string { return sourceIndexValue(kind, client.ObjectKeyFromObject(o)) }, false)
}

// artifactChanged passes source events that may change what a
// Kustomization renders: a new artifact digest or revision.
type artifactChanged struct{ predicate.Funcs }

func (artifactChanged) Create(e event.CreateEvent) bool {
	return sourceArtifact(e.Object) != nil
}

func (artifactChanged) Update(e event.UpdateEvent) bool {
	a, b := sourceArtifact(e.ObjectOld), sourceArtifact(e.ObjectNew)
	if b == nil {
		return false
	}
	return a == nil || a.Digest != b.Digest || a.Revision != b.Revision || a.URL != b.URL
}

func (artifactChanged) Delete(event.DeleteEvent) bool   { return false }
func (artifactChanged) Generic(event.GenericEvent) bool { return false }

// state is what one reconcile's steps hand to each other.
type state struct {
	// source is the artifact of spec.sourceRef's object.
	source *meta.Artifact
	vars   render.Variables
	// keys are spec.decryption's keys (nil without spec.decryption), as
	// the Secret holds them (the render worker parses them again), and
	// keysDigest their hash for the cache key.
	keys       *renderworker.Decryption
	keysDigest string
	key        string
	// tree is the shared source tree the build reads (released when the
	// reconcile ends), and workDir its render work folder.
	tree    *sourcetree.Tree
	workDir string
	result  *render.Result
	// news: whether a good render is announced.
	news news
}

// Finalizer is render-controller's finalizer. HelmReleases get it (their
// deletion deletes the HelmChart render-controller made); Kustomizations
// no longer do, and it is released from those an older render-controller
// gave it when they are deleted (doc.go, "Deletion").
const Finalizer = "render.plumb.dev/finalizer"

// setUp builds what this reconciler shares with the HelmRelease one
// (renderKind): the store of Kustomization renders and the skeleton, and
// the source cache when SourceTrees is nil. render-controller writes a
// part of the Kustomization's status (Partial): Rendered speaks for its
// result, and sync-controller owns Ready, Reconciling, Stalled and
// observedGeneration. A failure is retried after spec.retryInterval, and
// every failure message says which render is still served.
func (r *KustomizationReconciler) setUp() error {
	r.trees = r.SourceTrees
	if r.trees == nil {
		trees, err := sourcetree.New(sourcetree.Options{Dir: r.TmpDir, Limits: r.limits()})
		if err != nil {
			return fmt.Errorf("creating the source cache: %w", err)
		}
		r.trees = trees
	}
	store := &rendered.Store{Storage: r.Storage, Events: r.Events, Metrics: r.Metrics, Kind: kustomizev1.KustomizationKind}
	sk := renderSkeleton(r.Client, store, "revision",
		func(obj *kustomizev1.Kustomization) *meta.Artifact { return obj.Status.RenderedArtifact }, ownedStatus, r.forget, r.finalize)
	sk.DefaultReason = meta.ArtifactFailedReason
	sk.WriteStatus = r.writeStatus
	// The delete event and the sweep at start remove the artifacts: the
	// finalizer's apply is a write of the Kustomization saved.
	sk.Finalizer.Retired = true
	r.renderKind = newRenderKind(store, sk, r.Renderer, r.HTTPClient)
	return nil
}

// Reconcile runs the steps source, variables, decryption, cache, download, build,
// store and announce, stopping at the first error or at an up-to-date
// cache (pkg/reconcile summarizes into the Rendered condition and applies
// it with status.renderedArtifact).
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &kustomizev1.Kustomization{}
	if ok, err := r.start(ctx, r.Client, req, obj, r.forget, r.forgetReplaced); !ok {
		return ctrl.Result{}, err
	}
	st := &state{news: newsAtStart(obj)}
	defer func() { st.tree.Release() }()
	result, err := r.run(ctx, obj,
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("variables", r.reconcileVariables, obj, st),
		plumbreconcile.Bind("decryption", r.reconcileDecryption, obj, st),
		plumbreconcile.Bind("cache", r.reconcileCache, obj, st),
		plumbreconcile.Bind("download", r.reconcileDownload, obj, st),
		plumbreconcile.Bind("build", r.reconcileBuild, obj, st),
		plumbreconcile.Bind("store", r.reconcileStore, obj, st),
		plumbreconcile.Bind("announce", r.reconcileAnnounce, obj, st),
	)
	if err != nil {
		return result, err
	}
	return r.untilGrace(obj, result), nil
}

// forgetReplaced forgets what was kept for an object deleted and created
// again under obj's name before a reconcile saw it gone, so the new one is
// rendered and announced afresh.
func (r *KustomizationReconciler) forgetReplaced(obj *kustomizev1.Kustomization) {
	if r.replaced(obj) {
		r.forget(client.ObjectKeyFromObject(obj))
		r.replaced(obj) // forget dropped the new UID with the rest
	}
}

// finalize releases render-controller's finalizer from a deleted
// Kustomization an older version gave it, once its rendered artifacts are
// gone (renderSkeleton: after sync-controller's finalizer, and forget) and
// something still holds it (another finalizer). (A deleted object that
// nothing holds is gone: Reconcile finds nothing and forgets it.)
func (r *KustomizationReconciler) finalize(ctx context.Context, obj *kustomizev1.Kustomization) error {
	return r.sk.Finalizer.Release(ctx, obj)
}

// reconcileSource reads the source of spec.sourceRef (a GitRepository,
// an OCIRepository or an ExternalArtifact). Sets Rendered=False with reason InvalidSpec (stalled)
// for a cross-namespace reference while --no-cross-namespace-refs is set,
// and DependencyNotReady (waiting) while the source is missing or has no
// artifact yet.
func (r *KustomizationReconciler) reconcileSource(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	key := sourceKey(obj)
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return plumbreconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf(
			"cross-namespace references are not allowed: sourceRef %s/%s is outside namespace %s", key.Namespace, key.Name, obj.Namespace))
	}
	kind := obj.Spec.SourceRef.Kind
	src := newSource(kind)
	if src == nil {
		// The CRD's enum refuses other kinds; an object stored before a
		// downgrade may still hold one.
		return plumbreconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("spec.sourceRef.kind %q is not a source kind", kind))
	}
	if err := r.Get(ctx, key, src); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return plumbreconcile.Waiting(meta.DependencyNotReadyReason, defaulted(r.DependencyRequeue, defaultDependencyRequeue),
				fmt.Errorf("%s %s not found", kind, key))
		}
		return err
	}
	a := sourceArtifact(src)
	if a == nil || a.URL == "" || a.Digest == "" {
		return plumbreconcile.Waiting(meta.DependencyNotReadyReason, defaulted(r.DependencyRequeue, defaultDependencyRequeue),
			fmt.Errorf("%s %s has no artifact yet%s", kind, key, producedFrom(src)))
	}
	st.source = a
	return nil
}

// reconcileVariables gathers the postBuild variables: substituteFrom
// ConfigMaps and Secrets in order (a later one wins), then substitute (which
// wins over all). Sets Rendered=False (SubstituteFailed) when a referenced
// object is missing and not optional.
func (r *KustomizationReconciler) reconcileVariables(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	vars, err := r.variables(ctx, obj)
	if err != nil {
		return plumbreconcile.Failed(kustomizev1.SubstituteFailedReason, err)
	}
	st.vars = vars
	return nil
}

// reconcileCache computes the render's cache key (source digest,
// generation, variables, options; with spec.plugin the plugins'
// versions) and ends the reconcile when the last
// successful render had that key and its artifact is intact in storage
// (plumbreconcile.ErrStop). Sets no condition (Rendered stays True).
func (r *KustomizationReconciler) reconcileCache(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	st.key = cacheKey(st.source.Digest, obj.Generation, st.vars, r.StrictSubstitution, st.keysDigest)
	if obj.Spec.Plugin != nil {
		st.key = r.pluginCacheKey(ctx, st.key, obj.Spec.Plugin)
	}
	r.cacheMu.Lock()
	cached := r.cache[client.ObjectKeyFromObject(obj)]
	r.cacheMu.Unlock()
	if r.pendingRender(ctx, obj, cached, st.key) {
		// Offered on the feed and not taken yet (renderfeed.go).
		return plumbreconcile.ErrStop
	}
	if cached != st.key || obj.Status.RenderedArtifact == nil {
		return nil
	}
	if c := conditions.Get(obj, kustomizev1.RenderedCondition); c == nil ||
		c.Status != metav1.ConditionTrue || c.ObservedGeneration != obj.Generation {
		return nil
	}
	if !r.store.Intact(ctx, obj.Status.RenderedArtifact) {
		return nil
	}
	return plumbreconcile.ErrStop
}

// reconcileDownload takes the source tree of the artifact's digest from
// the source cache: extracted once per digest and shared, read-only, by
// every Kustomization rendering that revision (internal/sourcetree). When
// no Kustomization holds it yet it is fetched with retries and backoff,
// its sha256 digest verified, and only then extracted, refusing unsafe or
// oversized archives. Sets Rendered=False (ArtifactFailed) on any failure;
// nothing is built from a partial or tampered archive.
func (r *KustomizationReconciler) reconcileDownload(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	a := st.source
	// spec.timeout bounds the download with all its retries.
	ctx, cancel := context.WithTimeout(ctx, obj.GetTimeout().Duration)
	defer cancel()
	tree, err := r.trees.Acquire(ctx, a.Digest, func(ctx context.Context) ([]byte, error) {
		return fetch.Bytes(ctx, a.URL, a.Digest, fetch.Options{
			Client:   r.downloads,
			MaxSize:  r.limits().MaxArchiveBytes,
			Attempts: r.DownloadAttempts,
			Backoff:  r.DownloadBackoff,
		})
	})
	var refused *sourcetree.RefusedError
	switch {
	case errors.As(err, &refused):
		return plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("the source artifact of revision %q was refused: %w", a.Revision, err))
	case err != nil:
		return plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("downloading the source artifact of revision %q failed: %w", a.Revision, err))
	}
	st.tree = tree
	st.workDir = tree.Dir
	return nil
}

// reconcileBuild runs pkg/render on the extracted tree in a render worker
// (pkg/renderworker: its own process, with hard memory, CPU and file
// limits, killed at --render-timeout), in the sandbox, decrypting with
// spec.decryption's keys in the worker's memory. Sets Rendered=False with
// reason BuildFailed, SubstituteFailed, ValidationFailed,
// RemoteResourceRefused, LimitExceeded or DecryptionFailed and records a
// warning event with the message; a LimitExceeded is not tried again for
// the same inputs until its backoff has passed (limitHold).
func (r *KustomizationReconciler) reconcileBuild(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	res, err := runRender(ctx, r.renderKind, obj, st.key, defaulted(r.RenderTimeout, DefaultRenderTimeout),
		obj.GetRetryInterval(), obj.Spec.Interval.Duration, func(ctx context.Context) (*render.Result, error) {
			if obj.Spec.Plugin != nil {
				return r.renderByPlugin(ctx, obj, st)
			}
			return r.pool.Kustomize(ctx, st.workDir, &obj.Spec, renderworker.KustomizeOptions{
				Vars:               st.vars,
				StrictSubstitution: r.StrictSubstitution,
				Limits:             r.RenderLimits,
				Decryption:         st.keys,
				// The tree is one digest's and never changes (sourcetree), so
				// Kustomizations rendering the same path of it with the same
				// spec fields share kustomize's output (never with keys:
				// pkg/render).
				Share: true,
			})
		})
	st.result = res
	return err
}

// reconcileStore stores the manifests as obj's rendered artifact
// (rendered.Store: kustomization/<ns>/<name>/<digest>.yaml, revision the
// source revision, the newest --artifact-retention-records files kept,
// and those of status.history: historyretention.go)
// and remembers the cache key. Sets Rendered=False (ArtifactFailed) when
// storing fails.
func (r *KustomizationReconciler) reconcileStore(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	key := client.ObjectKeyFromObject(obj)
	a, isNew, err := r.store.Store(ctx, key, obj.Status.RenderedArtifact, rendered.Render{
		Manifests: st.result.Manifests, Digest: st.result.Digest, Revision: st.source.Revision,
		Keep: historyDigests(obj),
	})
	if err != nil {
		return err
	}
	obj.Status.RenderedArtifact = a
	st.news.stored = isNew
	r.cacheMu.Lock()
	if r.cache == nil {
		r.cache = map[types.NamespacedName]string{}
	}
	r.cache[key] = st.key
	r.cacheMu.Unlock()
	return nil
}

// reconcileAnnounce sets Rendered=True with the object count and revision,
// and records a Rendered event (with the count in metadata) for a new
// artifact, or for the same one again after a failure (rendered.Announce).
func (r *KustomizationReconciler) reconcileAnnounce(_ context.Context, obj *kustomizev1.Kustomization, st *state) error {
	a := obj.Status.RenderedArtifact
	n := len(st.result.Objects)
	r.store.Announce(obj, a, fmt.Sprintf("rendered %d objects from revision %q", n, a.Revision),
		st.news.any(), map[string]string{"objects": fmt.Sprint(n)})
	return nil
}

// ownedStatus is the part of a Kustomization's status this controller
// owns: status.renderedArtifact and the Rendered condition.
func ownedStatus(obj *kustomizev1.Kustomization) any {
	return &kustomizev1.KustomizationStatus{RenderedArtifact: obj.Status.RenderedArtifact, Conditions: ownedConditions(obj)}
}

// replaced records obj's UID as the one reconciled under its name and
// reports whether another object of that name was before it.
func (r *KustomizationReconciler) replaced(obj *kustomizev1.Kustomization) bool {
	key := client.ObjectKeyFromObject(obj)
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.uids == nil {
		r.uids = map[types.NamespacedName]types.UID{}
	}
	prev, ok := r.uids[key]
	r.uids[key] = obj.UID
	return ok && prev != obj.UID
}

// forget drops what is kept for a deleted object: its cache entry and UID,
// and what renderKind.forget drops.
func (r *KustomizationReconciler) forget(key types.NamespacedName) {
	r.cacheMu.Lock()
	delete(r.cache, key)
	delete(r.uids, key)
	delete(r.written, key)
	r.cacheMu.Unlock()
	r.renderKind.forget(key)
}

func (r *KustomizationReconciler) limits() artifact.Limits {
	l := r.Limits
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = artifact.DefaultMaxArchiveBytes
	}
	return l
}

func sourceKey(obj *kustomizev1.Kustomization) types.NamespacedName {
	ns := obj.Spec.SourceRef.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: obj.Spec.SourceRef.Name}
}
