package objectset

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/panics"
)

// children watches the objects the sets wrote, so that one edited or
// deleted by another writer brings its set back at once to apply it
// again (Git says what it is, not whoever wrote last). Its informers are
// metadata-only and see only objects carrying the set.plumb.dev/name
// label; a kind is watched from the first time a set applies an object
// of it, so a cluster whose sync-controller may not list a kind no set
// writes loses nothing.
//
// A write is foreign when a managedFields entry of the object itself
// (not its status) other than plumb-sync-objectset's changed: the sets'
// own applies touch only their own entry and so wake nobody, and the
// status that render-controller and sync-controller write on a child
// Kustomization is no concern of the set.
type children struct {
	cache cache.Cache
	log   logr.Logger
	// lister and mapper make the first list of a kind by hand (probe), as
	// the informer would, to learn whether the controller may.
	lister metadata.Interface
	mapper apimeta.RESTMapper

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	queue   workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]
	// changed holds, per set, its objects another writer changed or
	// deleted since the set last applied them: what a restore names.
	changed map[types.NamespacedName]map[object.ID]change
	// pruning holds the UIDs of objects a set is deleting itself: their
	// deletion is no reason to come back.
	pruning map[types.UID]bool
	// forbidden holds the kinds the controller may not list, with the API
	// server's answer: no informer runs for them (it would retry and log
	// the refusal forever), and the sets that write them say so in Ready.
	forbidden map[schema.GroupKind]string
}

// change is another writer's change to an object of a set.
type change struct {
	// deleted: the object is gone; otherwise it was changed.
	deleted bool
	// by names the field managers of the foreign write, when it was a
	// change.
	by string
	// resourceVersion is the object's after the change: an apply that
	// returns the same one changed nothing the set sets.
	resourceVersion string
}

func newChildren(mgr manager.Manager, log logr.Logger) (*children, error) {
	owned, err := labels.NewRequirement(NameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultLabelSelector: labels.NewSelector().Add(*owned),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of the sets' objects: %w", err)
	}
	lister, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	ch := &children{
		cache:     c,
		log:       log,
		lister:    lister,
		mapper:    mgr.GetRESTMapper(),
		forbidden: map[schema.GroupKind]string{},
		watched:   map[schema.GroupVersionKind]bool{},
		changed:   map[types.NamespacedName]map[object.ID]change{},
		pruning:   map[types.UID]bool{},
	}
	return ch, mgr.Add(c)
}

// source hands the controller's queue to the watch.
func (c *children) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.queue = q
		return nil
	})
}

// syncWait bounds how long the first apply of a kind waits for its
// informer's first list.
const syncWait = 10 * time.Second

// watch makes sure the kind is watched. The first call for a kind waits
// for the informer's first list, so that a change right after the apply
// is seen as one (the list would show it as the object's first state),
// but at most syncWait: a kind that is slow to list keeps retrying in the
// background without holding the reconciles that follow.
//
// A kind the controller may not list or may not watch (its RBAC:
// deploy/sync-controller's ClusterRole narrowed) gets no informer, which
// would only retry and log the refusal: watch returns a *forbiddenError,
// and each later call asks again, so that the kind is watched from the
// first reconcile after the RBAC allows both.
func (c *children) watch(ctx context.Context, gvk schema.GroupVersionKind) error {
	c.mu.Lock()
	done := c.watched[gvk]
	c.mu.Unlock()
	if done {
		return nil
	}
	if err := c.probe(ctx, gvk); err != nil {
		return err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	informer, err := c.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watched[gvk] {
		return nil
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) { c.onUpdate(gvk, o, n) },
		DeleteFunc: func(o any) { c.onDelete(gvk, o) },
	}); err != nil {
		return err
	}
	c.watched[gvk] = true
	c.mu.Unlock()
	defer c.mu.Lock()
	wait, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	if !toolscache.WaitForCacheSync(wait.Done(), informer.HasSynced) {
		return fmt.Errorf("the first list of %s did not end within %s", gvk.Kind, syncWait)
	}
	return nil
}

// forbiddenError is a kind the controller may not list or may not
// watch (verb), so cannot watch.
type forbiddenError struct {
	kind schema.GroupKind
	verb string
	err  error
}

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("sync-controller may not %s %s objects: %v", e.verb, e.kind.Kind, e.err)
}

// probe lists one object of the kind with the sets' label and opens a
// watch from that list, as the informer's first list and watch would,
// and records whether the API server refused either: RBAC may grant list
// without watch, and an informer would then retry its watch forever. An
// error other than a refusal is left to the informer, which retries it.
func (c *children) probe(ctx context.Context, gvk schema.GroupVersionKind) error {
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	verb := "list"
	resource := c.lister.Resource(mapping.Resource)
	list, err := resource.List(ctx, metav1.ListOptions{LabelSelector: NameLabel, Limit: 1})
	if err == nil {
		verb = "watch"
		var w watch.Interface
		w, err = resource.Watch(ctx, metav1.ListOptions{LabelSelector: NameLabel, ResourceVersion: list.ResourceVersion, TimeoutSeconds: ptr.To[int64](1)})
		if err == nil {
			w.Stop()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if apierrors.IsForbidden(err) {
		c.forbidden[gvk.GroupKind()] = err.Error()
		return &forbiddenError{kind: gvk.GroupKind(), verb: verb, err: err}
	}
	delete(c.forbidden, gvk.GroupKind())
	return nil
}

// unwatched is Ready's note for a set whose inventory holds kinds the
// controller may not list: which, why, and what it costs. "" when every
// kind is watched.
func (c *children) unwatched(inv *kustomizev1.Inventory) string {
	if inv == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[schema.GroupKind]bool{}
	var kinds, why []string
	for _, e := range inv.Entries {
		id := inventory.IDOf(e)
		gk := schema.GroupKind{Group: id.Group, Kind: id.Kind}
		msg, ok := c.forbidden[gk]
		if !ok || seen[gk] {
			continue
		}
		seen[gk] = true
		kinds = append(kinds, gk.Kind)
		why = append(why, msg)
	}
	if len(kinds) == 0 {
		return ""
	}
	return fmt.Sprintf("; drift of its %s objects is not corrected until sync-controller may list and watch them (%s): another writer's change is undone only at the next interval",
		strings.Join(kinds, ", "), strings.Join(why, "; "))
}

func (c *children) onUpdate(gvk schema.GroupVersionKind, oldObj, newObj any) {
	// Tenants write these objects; client-go would crash the process on
	// a panic of its handler.
	defer panics.Log("objectset watch")
	o, ok1 := oldObj.(*metav1.PartialObjectMetadata)
	n, ok2 := newObj.(*metav1.PartialObjectMetadata)
	if !ok1 || !ok2 {
		return
	}
	by := takenBy(o.ManagedFields, n.ManagedFields)
	if len(by) == 0 {
		return
	}
	c.record(gvk, n, change{by: strings.Join(by, ", "), resourceVersion: n.ResourceVersion})
}

func (c *children) onDelete(gvk schema.GroupVersionKind, obj any) {
	defer panics.Log("objectset watch")
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	c.mu.Lock()
	ours := c.pruning[m.UID]
	delete(c.pruning, m.UID)
	c.mu.Unlock()
	if ours {
		return
	}
	c.record(gvk, m, change{deleted: true})
}

// record notes the change for the object's set and enqueues the set.
// At most MaxObjects changes are kept per set: a set has no more
// objects, and the labels that map an object to its set are anyone's to
// write in the namespace.
func (c *children) record(gvk schema.GroupVersionKind, m *metav1.PartialObjectMetadata, ch change) {
	set, ok := setOf(m)
	if !ok {
		return
	}
	id := object.ID{Group: gvk.Group, Kind: gvk.Kind, Namespace: m.Namespace, Name: m.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.changed[set]
	if ids == nil {
		ids = map[object.ID]change{}
		c.changed[set] = ids
	}
	if prev, seen := ids[id]; seen && !prev.deleted && !ch.deleted {
		ch.by = joinManagers(prev.by, ch.by)
		ids[id] = ch
	} else if seen || len(ids) < MaxObjects {
		ids[id] = ch
	}
	if c.queue == nil {
		return
	}
	what := "changed by " + ch.by
	if ch.deleted {
		what = "deleted"
	}
	c.log.V(1).Info("an object of a set was "+what, "object", id.String(), "objectset", set.String())
	c.queue.Add(ctrlreconcile.Request{NamespacedName: set})
}

// joinManagers joins two lists of managers, each once, sorted.
func joinManagers(a, b string) string {
	all := append(strings.Split(a, ", "), strings.Split(b, ", ")...)
	sort.Strings(all)
	return strings.Join(slices.Compact(all), ", ")
}

// setOf is the set an object belongs to: the ObjectSet its controller
// owner reference names, else the one its labels name; always one of
// the object's own namespace, where a set writes.
func setOf(m *metav1.PartialObjectMetadata) (types.NamespacedName, bool) {
	for _, ref := range m.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == setv1.ObjectSetKind &&
			strings.HasPrefix(ref.APIVersion, setv1.GroupVersion.Group+"/") {
			return types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, true
		}
	}
	name, ns := m.Labels[NameLabel], m.Labels[NamespaceLabel]
	if name == "" || ns != m.Namespace {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// takenBy returns the writers that took fields of the sets' own from
// old to new — changed or removed a field the set sets — or nil when
// nobody did. In server-side apply a write that changes a field moves it
// out of the entry of the manager that owned it (without touching that
// entry's time), so the sets' entry losing fields while its time stays is
// such a write; the writers are the managers whose entry for the object
// itself (not a subresource) is new or changed in the same update. A
// write of fields the set does not set (an annotation, a finalizer) takes
// nothing and wakes no set.
func takenBy(old, new []metav1.ManagedFieldsEntry) []string {
	o, n := ourEntry(old), ourEntry(new)
	switch {
	case o == nil:
		return nil // not applied by a set (yet)
	case n == nil:
		// Every field taken: the entry is gone.
	case timeOf(*o) != timeOf(*n):
		return nil // the set's own apply
	case !lostFields(*o, *n):
		return nil // nothing of the set's taken (an apply of the same second gives fields back)
	}
	before := map[string]metav1.ManagedFieldsEntry{}
	for _, e := range old {
		if k, ok := foreignKey(e); ok {
			before[k] = e
		}
	}
	var by []string
	for _, e := range new {
		k, ok := foreignKey(e)
		if !ok {
			continue
		}
		if prev, had := before[k]; !had || timeOf(prev) != timeOf(e) || fieldsOf(prev) != fieldsOf(e) {
			by = append(by, e.Manager)
		}
	}
	if len(by) == 0 {
		by = []string{"an unknown writer"}
	}
	sort.Strings(by)
	return by
}

func foreignKey(e metav1.ManagedFieldsEntry) (string, bool) {
	if e.Manager == FieldManager || e.Subresource != "" {
		return "", false
	}
	return e.Manager + "\x00" + string(e.Operation), true
}

// ourEntry is the sets' entry for the object itself, or nil.
func ourEntry(entries []metav1.ManagedFieldsEntry) *metav1.ManagedFieldsEntry {
	for i, e := range entries {
		if e.Manager == FieldManager && e.Subresource == "" {
			return &entries[i]
		}
	}
	return nil
}

func timeOf(e metav1.ManagedFieldsEntry) string {
	if e.Time == nil {
		return ""
	}
	return e.Time.UTC().Format(time.RFC3339)
}

// lostFields reports whether the entry n lacks a field the entry o had.
// Entries that do not parse count as changed when their text differs.
func lostFields(o, n metav1.ManagedFieldsEntry) bool {
	if fieldsOf(o) == fieldsOf(n) {
		return false
	}
	var before, after fieldpath.Set
	if before.FromJSON(strings.NewReader(fieldsOf(o))) != nil || after.FromJSON(strings.NewReader(fieldsOf(n))) != nil {
		return true
	}
	return !before.Difference(&after).Empty()
}

func fieldsOf(e metav1.ManagedFieldsEntry) string {
	if e.FieldsV1 == nil {
		return ""
	}
	return e.FieldsV1.GetRawString()
}

// expectDeletion marks an object the set deletes itself (a prune).
func (c *children) expectDeletion(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruning[uid] = true
}

// notDeleting undoes expectDeletion when the delete failed.
func (c *children) notDeleting(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pruning, uid)
}

// changes returns the set's objects changed or deleted by another
// writer since they were last applied.
func (c *children) changes(set types.NamespacedName) map[object.ID]change {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[object.ID]change, len(c.changed[set]))
	for id, ch := range c.changed[set] {
		out[id] = ch
	}
	return out
}

// applied forgets the changes the set saw before it applied again
// (seen, from changes): the objects it applied are as Git says again,
// and those it no longer renders are not its concern. A change that came
// after stays, with the set queued again.
func (c *children) applied(set types.NamespacedName, seen map[object.ID]change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range seen {
		if c.changed[set][id] == ch {
			delete(c.changed[set], id)
		}
	}
	if len(c.changed[set]) == 0 {
		delete(c.changed, set)
	}
}

// forget drops what was noted for a set that is gone.
func (c *children) forget(set types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.changed, set)
}
