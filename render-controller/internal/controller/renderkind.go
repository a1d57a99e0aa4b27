package controller

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/render-controller/internal/rendered"
)

// renderKind is what both render reconcilers hold and do the same way,
// T being their kind: the skeleton (renderSkeleton), the store of renders
// (internal/rendered), the limit holds, the render worker pool, the HTTP
// client of downloads and the per-object counters. Each reconciler builds
// its own in SetupWithManager (newRenderKind) from its exported fields,
// which main sets in a composite literal, and keeps what differs: what it
// renders from. A reconciler that was not set up has none, and its
// Reconcile fails loudly rather than set itself up half-way.
type renderKind[T plumbreconcile.Object] struct {
	sk    *plumbreconcile.Controller[T]
	store *rendered.Store
	// held are the inputs whose render passed a limit, not tried again
	// before their backoff.
	held limitHolds
	// pool runs the renders, and downloads fetches the artifacts they are
	// made from.
	pool      *renderworker.Pool
	downloads *http.Client

	counters sync.Map // types.NamespacedName -> *counters
}

// newRenderKind builds a kind's renderKind around its store and skeleton.
// pool is the reconciler's Renderer, or a pool of its own with
// pkg/renderworker's defaults when nil (tests); downloads is its
// HTTPClient, or a client with a 5 minute timeout on a transport of its
// own when nil: the process's default transport refuses everything
// (render.LockDownProcess).
func newRenderKind[T plumbreconcile.Object](store *rendered.Store, sk *plumbreconcile.Controller[T],
	pool *renderworker.Pool, downloads *http.Client) *renderKind[T] {
	if pool == nil {
		pool = renderworker.NewPool(renderworker.Options{})
	}
	if downloads == nil {
		downloads = &http.Client{Transport: render.NewTransport(), Timeout: 5 * time.Minute}
	}
	return &renderKind[T]{sk: sk, store: store, pool: pool, downloads: downloads}
}

// news says whether a good render is news in one reconcile, worth a
// Rendered event (rendered.Store.Announce, which still sends one render's
// once): it is when the reconcile stored a new artifact, or when Rendered
// was not True as it began (the first good render after a failure or a
// wait).
type news struct {
	stored, recovered bool
}

// newsAtStart is the news of a reconcile of obj as its steps begin.
func newsAtStart(obj conditions.Getter) news {
	return news{recovered: !conditions.IsTrue(obj, kustomizev1.RenderedCondition)}
}

func (n news) any() bool { return n.stored || n.recovered }

// counters count the work done for one object (tests).
type counters struct{ reconciles, renders atomic.Int64 }

// start reads req's object into obj and begins its reconcile: an object
// gone is forgotten (forget, the reconciler's, which calls
// renderKind.forget), the reconcile is counted, prepare runs (nil:
// nothing), then the skeleton's Start (finalizer, suspension). ok says
// whether the steps run; err is the reconcile's error when they do not.
func (k *renderKind[T]) start(ctx context.Context, c client.Reader, req ctrl.Request, obj T,
	forget func(types.NamespacedName), prepare func(T)) (ok bool, err error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			forget(req.NamespacedName)
		}
		return false, client.IgnoreNotFound(err)
	}
	k.count(req.NamespacedName).reconciles.Add(1)
	if prepare != nil {
		prepare(obj)
	}
	return k.sk.Start(ctx, obj)
}

// run runs the steps in the skeleton, then tells the store the outcome
// (a failure makes the next good render news again).
func (k *renderKind[T]) run(ctx context.Context, obj T, steps ...plumbreconcile.Step) (ctrl.Result, error) {
	result, err := k.sk.Run(ctx, obj, steps...)
	k.store.Reconciled(obj)
	return result, err
}

// forget drops what is kept here for a deleted object: its limit hold,
// announcement, metric series and artifact folder.
func (k *renderKind[T]) forget(key types.NamespacedName) {
	k.held.forget(key)
	k.store.Forget(key)
}

func (k *renderKind[T]) count(key types.NamespacedName) *counters {
	c, _ := k.counters.LoadOrStore(key, &counters{})
	return c.(*counters)
}

// runRender runs one render of obj's inputs (its cache key or inputs
// digest) within timeout, do being the kind's render: not while those
// inputs are held back after passing a limit (limitHolds), counted
// (counters and the metric of work done); a failure goes through the
// limit holds (a LimitExceeded holds the inputs back, with retryInterval
// and interval bounding the backoff), a success lifts the hold.
func runRender[T plumbreconcile.Object, R any](ctx context.Context, k *renderKind[T], obj T, inputs string,
	timeout, retryInterval, interval time.Duration, do func(context.Context) (R, error)) (R, error) {
	var none R
	key := client.ObjectKeyFromObject(obj)
	if err := k.held.check(key, inputs); err != nil {
		return none, err
	}
	k.count(key).renders.Add(1)
	k.store.Metrics.Worked(obj.GetNamespace(), obj.GetName())
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := do(ctx)
	if err != nil {
		return none, k.held.failed(key, inputs, retryInterval, interval, err)
	}
	k.held.forget(key)
	return res, nil
}

const (
	// DefaultRenderTimeout bounds a render when RenderTimeout is zero.
	DefaultRenderTimeout = 2 * time.Minute
	// defaultDependencyRequeue is the wait for a source or HelmChart when
	// DependencyRequeue is zero; its watch usually comes first.
	defaultDependencyRequeue = 10 * time.Second
)

// defaulted is d, or def when d is not positive (an unset option).
func defaulted(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
