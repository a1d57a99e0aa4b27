package controller

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers, per object, the resourceVersion of this
// controller's last write to it (a status apply, a finalizer) until the
// manager's cache has it. A sync must start from the status as stored — it
// resumes an interrupted sync, counts retries and keeps the sync ID of its
// hooks from it — and the cache can lag behind a write made a moment
// before; it cannot lag behind anything else that matters, since what
// brings a Kustomization back (render-controller's status, a spec change)
// comes through the cache itself. So a reconcile reads the cache, and the
// API server only while a write of its own is not in the cache yet
// (docs/design/anatomy-of-a-controller.md). resourceVersions are compared
// for equality only, as the API asks.
type ownWrites struct {
	mu sync.Mutex
	// written is the version of each object's last write that the cache
	// has not taken in yet. While writes are under way (inflight), the
	// versions the cache takes in are kept (during): the watch can deliver
	// a write before its response is back.
	written  map[types.NamespacedName]string
	inflight map[types.NamespacedName]int
	during   map[types.NamespacedName][]string
}

// writing says a write to the object is under way; wrote ends it.
func (w *ownWrites) writing(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight == nil {
		w.inflight = map[types.NamespacedName]int{}
	}
	w.inflight[key]++
}

// wrote ends a write begun with writing: the object is stored at
// resourceVersion rv, "" when nothing was written.
func (w *ownWrites) wrote(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rv != "" && !slices.Contains(w.during[key], rv) {
		if w.written == nil {
			w.written = map[types.NamespacedName]string{}
		}
		w.written[key] = rv
	}
	if w.inflight[key]--; w.inflight[key] <= 0 {
		delete(w.inflight, key)
		delete(w.during, key)
	}
}

// pending reports whether a write of this controller to the object may
// not be in the cache yet.
func (w *ownWrites) pending(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.written[key]
	return ok
}

// seen is told every version of the object the cache takes in, in order:
// once it has the last write, every later version holds it too.
func (w *ownWrites) seen(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight[key] > 0 {
		if w.during == nil {
			w.during = map[types.NamespacedName][]string{}
		}
		w.during[key] = append(w.during[key], rv)
	}
	if w.written[key] == rv {
		delete(w.written, key)
	}
}

// forget drops the object: it is gone from the cache.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}

// watchOwnWrites tells r.writes of every version of obj's kind the
// manager's cache takes in. The informer's handlers run after its store
// has the version, so a pending write seen here is in what Client reads.
func (r *Syncer) watchOwnWrites(ctx context.Context, mgr ctrl.Manager, obj client.Object) error {
	inf, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	seen := func(o any) {
		if o, ok := o.(client.Object); ok {
			r.writes.seen(client.ObjectKeyFromObject(o), o.GetResourceVersion())
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, o any) { seen(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if o, ok := o.(client.Object); ok {
				r.writes.forget(client.ObjectKeyFromObject(o))
			}
		},
	})
	return err
}

// get reads the object at the start of a reconcile: from the cache, unless
// a write of this controller may not be in it yet, then from the API
// server (Reader).
func (r *Syncer) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	if r.Reader != nil && r.writes.pending(key) {
		return r.Reader.Get(ctx, key, obj)
	}
	return r.Client.Get(ctx, key, obj)
}
