package controller

import (
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// defaultRenderGrace is how long a generation render-controller has not
// rendered yet goes without a word from sync-controller: longer than a
// fleet's burst of new Kustomizations takes to render (the fleet benchmark's
// 1,000 render within about 40 s, docs/bench/fleet.md), short enough that a
// render-controller that is down shows in Ready within a minute.
const defaultRenderGrace = 30 * time.Second

// renderWaits holds back what sync-controller would write of an object
// whose current generation render-controller has not rendered yet: its
// finalizer and a Ready=Unknown "waiting for render-controller" status.
// Neither tells a reader anything in the usual case, where the render
// lands a moment later: a new object has nothing applied that a finalizer
// must prune, and kstatus already reads a generation newer than
// observedGeneration as in progress. Each is a write of a custom resource,
// though, the API server's costliest kind, and a fleet created at once
// would pay one per Kustomization for nothing. render-controller's status
// update brings the object back; if none comes within the grace, the
// reconcile goes on as before and says what it waits for.
//
// Entries are dropped when the object is rendered, deleted or leaves the
// shard, so there are never more than the objects in the cache.
type renderWaits struct {
	mu    sync.Mutex
	grace time.Duration
	// since is when a reconcile first found the object's generation
	// unrendered. A newer generation keeps it: a spec that keeps changing
	// while render-controller is down must not keep the object silent.
	since map[types.NamespacedName]time.Time
}

// hold returns how much longer a reconcile of key may stay silent,
// remembering now as the start of the wait when it is new; 0: the grace
// is over, the reconcile goes on.
func (w *renderWaits) hold(key types.NamespacedName, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since == nil {
		w.since = map[types.NamespacedName]time.Time{}
	}
	grace := w.grace
	if grace == 0 {
		grace = defaultRenderGrace
	}
	since, ok := w.since[key]
	if !ok {
		since = now
		w.since[key] = since
	}
	return max(0, grace-now.Sub(since))
}

// forget drops key's wait: it is rendered, deleted or another shard's.
func (w *renderWaits) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.since, key)
}

// renderPending says that render-controller has neither rendered nor
// failed to render app's current generation: the cases in which
// loadManifests waits for it (waitForRender).
func renderPending(app application) bool {
	obj := app.object()
	rendered := conditions.Get(obj, kustomizev1.RenderedCondition)
	if rendered != nil && rendered.ObservedGeneration == obj.GetGeneration() && rendered.Status == metav1.ConditionFalse {
		return false // a failure, reported at once
	}
	return app.rendered() == nil || (rendered != nil && rendered.ObservedGeneration < obj.GetGeneration())
}
