package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/panics"
	"plumb.dev/pkg/plan"
)

// Watcher keeps metadata-only informers on every kind of managed object and
// turns foreign writes and deletions into reconcile requests for the owning
// Kustomization (or HelmRelease). It is a manager Runnable (it runs the
// informer cache) and gives the controller a Source. A watcher serves one
// owner kind: its informers see only objects with that kind's name label,
// and it enqueues only owners of that kind, into that kind's controller.
type Watcher struct {
	kind     string
	cache    cache.Cache
	debounce time.Duration
	log      logr.Logger

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	queue   workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]
	// drift holds, per Kustomization, when a foreign change was first seen
	// since its last reconcile: the start of the detection-to-correction clock.
	drift map[types.NamespacedName]time.Time
	// changes wakes health waits when a watched object changes.
	changes *broadcaster
	// expected holds the UIDs of objects the engine itself is deleting.
	expected map[types.UID]bool
	// owners is the watcher of the owners' own cluster when this one
	// watches a remote cluster (ForCluster): the owners' queue and drift
	// clocks are there. Nil for a watcher of the owners' cluster.
	owners *Watcher
	// ownersNamespace is the one namespace whose owners a remote
	// cluster's events wake (ForCluster).
	ownersNamespace string
}

// NewWatcher returns a watcher for Kustomizations: its informers see only
// objects labelled with kustomize.plumb.dev/name.
func NewWatcher(cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper, debounce time.Duration, log logr.Logger) (*Watcher, error) {
	return NewWatcherFor(kustomizev1.KustomizationKind, cfg, scheme, mapper, debounce, log)
}

// NewWatcherFor returns a watcher for the owner kind (a Kustomization or a
// HelmRelease): its informers see only objects labelled with the kind's
// name label (manage.LabelKeys).
func NewWatcherFor(kind string, cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper, debounce time.Duration, log logr.Logger) (*Watcher, error) {
	nameKey, _ := manage.LabelKeys(kind)
	managed, err := labels.NewRequirement(nameKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:               scheme,
		Mapper:               mapper,
		DefaultLabelSelector: labels.NewSelector().Add(*managed),
		DefaultTransform:     digestManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the managed-object cache: %w", err)
	}
	return &Watcher{
		kind:     kind,
		cache:    c,
		debounce: debounce,
		log:      log,
		watched:  map[schema.GroupVersionKind]bool{},
		drift:    map[types.NamespacedName]time.Time{},
		changes:  newBroadcaster(),
		expected: map[types.UID]bool{},
	}, nil
}

// Start runs the informers until ctx ends.
func (w *Watcher) Start(ctx context.Context) error { return w.cache.Start(ctx) }

// ForCluster returns a watcher of w's owner kind whose informers watch
// another cluster, the one cfg reaches (a Kustomization's spec.kubeConfig),
// reading with cfg's identity: its events enqueue the owners into w's
// controller and start their drift clocks in w, since the owners live in
// w's cluster. It must be started (Start) and is stopped with its context.
//
// ownersNamespace is the only namespace whose owners its events may wake
// (the namespace of the kubeconfig's Secret: only Kustomizations there
// can target that cluster); the remote cluster's labels are its own to
// write, and must not wake, or fill the drift clock with, anyone else.
func (w *Watcher) ForCluster(cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper, ownersNamespace string) (*Watcher, error) {
	remote, err := NewWatcherFor(w.kind, cfg, scheme, mapper, w.debounce, w.log.WithValues("cluster", cfg.Host))
	if err != nil {
		return nil, err
	}
	remote.owners = w
	remote.ownersNamespace = ownersNamespace
	return remote, nil
}

// WaitStarted waits until Start has started the informer cache (Watch
// fails on a cache that is not started), or ctx ends; false when it ended.
func (w *Watcher) WaitStarted(ctx context.Context) bool { return w.cache.WaitForCacheSync(ctx) }

// Source hands the controller's queue to the watcher, so watch events can
// enqueue Kustomizations with a debounce delay.
func (w *Watcher) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queue = q
		return nil
	})
}

// HasQueue says whether the controller has started taking the watcher's
// events (Source): before, a foreign write starts a drift clock but wakes
// no one.
func (w *Watcher) HasQueue() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queue != nil
}

// Watching says whether the kind's informer has listed and its events are
// handled (Watch returned).
func (w *Watcher) Watching(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[gvk]
}

// Watch makes sure the kind is watched; the first call for a kind starts an
// informer and waits for its initial list.
func (w *Watcher) Watch(ctx context.Context, gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	done := w.watched[gvk]
	w.mu.Unlock()
	if done {
		return nil
	}
	informer, err := w.cache.GetInformer(ctx, metadataObject(gvk))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] {
		return nil
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: w.onUpdate,
		DeleteFunc: w.onDelete,
	}); err != nil {
		return err
	}
	w.watched[gvk] = true
	return nil
}

// Lookup returns the cached metadata of a managed object, or nil when the
// object does not exist or is not labelled as managed. The kind must be
// watched first.
func (w *Watcher) Lookup(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	obj := metadataObject(gvk)
	err := w.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// TakeDriftStart returns when a foreign change to the Kustomization's objects
// was first seen since the last call, and forgets it.
func (w *Watcher) TakeDriftStart(key types.NamespacedName) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.drift[key]
	delete(w.drift, key)
	return t, ok
}

// DriftPending says whether a foreign change to the owner's objects was
// seen since its last reconcile began (TakeDriftStart), without taking it.
func (w *Watcher) DriftPending(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.drift[key]
	return ok
}

// Changes returns a channel closed at the next change of any watched object.
func (w *Watcher) Changes() <-chan struct{} { return w.changes.next() }

func (w *Watcher) onUpdate(oldObj, newObj any) {
	// Tenants write these objects; client-go would crash the process on a
	// panic of its handler.
	defer panics.Log("drift watch")
	w.changes.notify()
	oldMeta, ok1 := oldObj.(*metav1.PartialObjectMetadata)
	newMeta, ok2 := newObj.(*metav1.PartialObjectMetadata)
	if !ok1 || !ok2 || !foreignWrite(oldMeta, newMeta) {
		return
	}
	w.enqueue(newMeta.Labels, "changed", newMeta)
}

// foreignWrite reports whether the update from old to new was made by a
// writer other than plumb-sync, to the object rather than its status.
func foreignWrite(old, new *metav1.PartialObjectMetadata) bool {
	if ourEntry(old.ManagedFields) != ourEntry(new.ManagedFields) {
		// Our own apply — unless another writer's entry changed too and
		// is not older than ours: a watch that missed events (relisted
		// after the API server came back) hands our apply and a foreign
		// write after it over as one update. A tie within the entries'
		// one-second resolution costs one drift check that finds nothing.
		return foreignFingerprint(old.ManagedFields) != foreignFingerprint(new.ManagedFields) &&
			!ourWriteIsNewest(new.ManagedFields)
	}
	if foreignFingerprint(old.ManagedFields) != foreignFingerprint(new.ManagedFields) {
		return true
	}
	// The same manager writing the same fields again within one second
	// leaves managedFields as they were; the generation (or, for kinds
	// without one, the resourceVersion, as they have no status to write)
	// still tells.
	if new.Generation > 0 {
		return new.Generation != old.Generation
	}
	return new.ResourceVersion != old.ResourceVersion
}

// ourEntry returns when plumb-sync last applied the object. Only the time
// counts: another manager's Update takes fields out of our entry without
// touching its time.
func ourEntry(entries []metav1.ManagedFieldsEntry) string {
	for _, e := range entries {
		if e.Manager == manage.FieldManager && e.Subresource == "" && e.Time != nil {
			return e.Time.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

func (w *Watcher) onDelete(obj any) {
	defer panics.Log("drift watch")
	w.changes.notify()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || w.takeExpected(m.UID) {
		return
	}
	w.enqueue(m.Labels, "deleted", m)
}

// expectDeletion marks a deletion the engine makes itself (a prune), so
// that its watch event does not start a drift check.
func (w *Watcher) expectDeletion(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expected[uid] = true
}

func (w *Watcher) takeExpected(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok := w.expected[uid]
	delete(w.expected, uid)
	return ok
}

func (w *Watcher) enqueue(objLabels map[string]string, what string, obj *metav1.PartialObjectMetadata) {
	owner, ok := manage.OwnerOfKind(w.kind, objLabels)
	if !ok || objLabels[plan.HookSyncLabel] != "" {
		return // hooks come and go by design; they are not drift
	}
	if w.owners != nil && owner.Namespace != w.ownersNamespace {
		return // a remote cluster's label naming an owner that cannot target it
	}
	key := types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}
	target := w
	if w.owners != nil {
		target = w.owners
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	if _, seen := target.drift[key]; !seen {
		target.drift[key] = time.Now()
	}
	if target.queue == nil {
		return
	}
	w.log.V(1).Info("managed object "+what+" by another writer", "object", obj.GetNamespace()+"/"+obj.GetName(), strings.ToLower(w.kind), key.String())
	// AddAfter coalesces a burst of writes into one reconcile.
	target.queue.AddAfter(ctrlreconcile.Request{NamespacedName: key}, w.debounce)
}

func metadataObject(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// broadcaster wakes every waiter at the next notify.
type broadcaster struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcaster() *broadcaster { return &broadcaster{ch: make(chan struct{})} }

func (b *broadcaster) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcaster) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}
