package objectset

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/reconcile"
	synccontroller "plumb.dev/sync-controller/internal/controller"
	"plumb.dev/sync-controller/internal/pullrequest"
)

// The labels every object of a set carries: which set gave it. prune
// deletes only objects that still carry them.
const (
	NameLabel      = setv1.NameLabel
	NamespaceLabel = setv1.NamespaceLabel
)

// FieldManager owns the fields of the objects a set applies, apart from
// sync-controller's other writes.
var FieldManager = kinds.FieldManager(kinds.SyncController, "objectset")

// statusFieldManager owns the sets' status.
var statusFieldManager = kinds.FieldManager(kinds.SyncController)

// gitRepositoryIndex indexes ObjectSets by the GitRepositories their git
// generators read (namespace/name).
const gitRepositoryIndex = ".spec.generators.git.sourceRef"

// PruneGuard decides whether a render prunes too much of the inventory:
// sync-controller's guard (controller.PruneGuard.HoldsShare), which
// returns why it holds, or "".
type PruneGuard func(removed, total int) string

// Reconciler reconciles ObjectSets.
type Reconciler struct {
	// Client reads the sets and GitRepositories (cached) and writes the
	// sets' status.
	Client client.Client
	// Reader reads kubeconfig Secrets uncached.
	Reader client.Reader
	// Config is the configuration the clients that write a set's objects
	// start from; each impersonates the set's ServiceAccount.
	Config *rest.Config
	Scheme *runtime.Scheme
	Events *events.Recorder
	// Metrics observes the sets' reconciles; nil records none.
	Metrics *metrics.Object
	Fetch   fetch.Options
	// DefaultServiceAccount acts for a set without
	// spec.serviceAccountName (--default-service-account).
	DefaultServiceAccount string
	// NoCrossNamespaceRefs: no reference leaves the set's namespace.
	NoCrossNamespaceRefs bool
	// Guard is the prune guard; nil guards nothing.
	Guard PruneGuard
	// PullRequests lists pull requests for pullRequests generators; a
	// set with one fails without it.
	PullRequests *pullrequest.Client

	sk       *reconcile.Controller[*setv1.ObjectSet]
	children *children
	mu       sync.Mutex
	clients  map[string]client.Client
}

// state is what one reconcile's steps hand to each other.
type state struct {
	elements []Element
	render   *rendered
	digest   string
	writer   client.Client
	removed  []*unstructured.Unstructured
	created  []string
}

// SetupWithManager registers the reconciler: on creation, spec change and
// requestedAt; on a change of a GitRepository a git generator reads; on a
// change of a Secret's metadata in the namespace of a set with a clusters
// generator; on another writer's change or deletion of an object a set
// wrote (children.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	ch, err := newChildren(mgr, mgr.GetLogger().WithName("objectset-children"))
	if err != nil {
		return err
	}
	r.children = ch
	r.sk = &reconcile.Controller[*setv1.ObjectSet]{
		Condition:     meta.ReadyCondition,
		DefaultReason: setv1.GeneratorFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		Succeeded: func(obj *setv1.ObjectSet) string {
			return succeeded(obj) + r.children.unwatched(obj.Status.Inventory)
		},
		OwnedStatus:  func(obj *setv1.ObjectSet) any { return &obj.Status },
		Client:       r.Client,
		FieldManager: statusFieldManager,
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &setv1.ObjectSet{}, gitRepositoryIndex, gitRepositoriesOf); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("objectset").
		For(&setv1.ObjectSet{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, reconcile.RequestedPredicate{}, synccontroller.ConfirmPruneChanged{}))).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(reconcile.Referrers(
			r.Client, func() client.ObjectList { return &setv1.ObjectSetList{} }, gitRepositoryIndex,
			func(o client.Object) string { return client.ObjectKeyFromObject(o).String() }, false)),
			builder.WithPredicates(artifactChanged{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.setsWithClusters), builder.OnlyMetadata).
		WatchesRawSource(r.children.source()).
		WithOptions(opts).
		Complete(r)
}

// gitRepositoriesOf is the index function of gitRepositoryIndex.
func gitRepositoriesOf(o client.Object) []string {
	set := o.(*setv1.ObjectSet)
	var keys []string
	each := func(g *setv1.GitGenerator) {
		if g != nil {
			keys = append(keys, gitRepositoryKey(set, g).String())
		}
	}
	for _, g := range set.Spec.Generators {
		each(g.Git)
		for _, c := range childrenOf(g) {
			each(c.Git)
		}
	}
	return keys
}

func childrenOf(g setv1.Generator) []setv1.ChildGenerator {
	switch {
	case g.Matrix != nil:
		return g.Matrix.Generators
	case g.Merge != nil:
		return g.Merge.Generators
	}
	return nil
}

// setsWithClusters maps a Secret to the sets of its namespace that have a
// clusters generator whose selector matches it (or has none).
func (r *Reconciler) setsWithClusters(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	var list setv1.ObjectSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the ObjectSets of a changed Secret's namespace")
		return nil
	}
	var reqs []ctrlreconcile.Request
	for i := range list.Items {
		if selectsSecret(&list.Items[i], o.GetLabels()) {
			reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

func selectsSecret(set *setv1.ObjectSet, lbls map[string]string) bool {
	match := func(c *setv1.ClustersGenerator) bool {
		if c == nil {
			return false
		}
		if c.Selector == nil {
			return true
		}
		sel, err := metav1.LabelSelectorAsSelector(c.Selector)
		return err == nil && sel.Matches(labelSet(lbls))
	}
	for _, g := range set.Spec.Generators {
		if match(g.Clusters) {
			return true
		}
		for _, c := range childrenOf(g) {
			if match(c.Clusters) {
				return true
			}
		}
	}
	return false
}

// Reconcile runs the steps generate, render, apply and prune (pkg/reconcile
// summarizes, writes status and requeues after spec.interval).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &setv1.ObjectSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.children.forget(req.NamespacedName)
			if r.Metrics != nil {
				r.Metrics.Forget(req.Namespace, req.Name)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The objects go with the set through their owner references (the
	// garbage collector), so a deleted set needs nothing of this one, and
	// restores nothing the garbage collector deletes.
	if !obj.DeletionTimestamp.IsZero() {
		r.children.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	// A suspended set restores nothing either: what other writers change
	// meanwhile is restored, and named, when it resumes.
	if obj.Spec.Suspend {
		r.sk.Record(obj)
		return ctrl.Result{}, nil
	}
	st := &state{}
	res, err := r.sk.Run(ctx, obj,
		reconcile.Bind("generate", r.generate, obj, st),
		reconcile.Bind("render", r.renderStep, obj, st),
		reconcile.Bind("apply", r.apply, obj, st),
		reconcile.Bind("prune", r.prune, obj, st),
	)
	return pollPullRequests(obj, res, err)
}

// generate evaluates the generators into st.elements and
// status.elements. Ready=False (GeneratorFailed, InvalidSpec).
func (r *Reconciler) generate(ctx context.Context, obj *setv1.ObjectSet, st *state) error {
	g := &generators{Client: r.Client, Reader: r.Reader, Fetch: r.Fetch, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		PullRequests: r.PullRequests}
	els, err := g.elements(ctx, obj)
	if err != nil {
		var re *reconcile.Error
		if errors.As(err, &re) {
			// Keep the step's policy and reason, with the path in the
			// message.
			cp := *re
			cp.Err = err
			return &cp
		}
		return reconcile.Failed(setv1.GeneratorFailedReason, err)
	}
	st.elements = els
	obj.Status.Elements = len(els)
	return nil
}

// renderStep renders the template per element and admits the objects.
// Ready=False (TemplateFailed); Stalled (ObjectRefused) for an object the
// set may not write.
func (r *Reconciler) renderStep(_ context.Context, obj *setv1.ObjectSet, st *state) error {
	out, err := renderAll(obj, st.elements, r.NoCrossNamespaceRefs)
	if err != nil {
		var refused *refusedError
		if errors.As(err, &refused) {
			return reconcile.Stalled(setv1.ObjectRefusedReason, err)
		}
		return reconcile.Stalled(setv1.TemplateFailedReason, err)
	}
	st.render = out
	sum := sha256.Sum256(out.text.Bytes())
	st.digest = "sha256:" + hex.EncodeToString(sum[:])
	return nil
}

// apply holds a render that would prune too much (Ready=False,
// PruneGuarded), then applies every object as the set's identity, owned
// by the set and labelled with it. Ready=False (ApplyFailed) on the first
// object refused; the inventory then keeps both the old entries and those
// applied, so that nothing applied is forgotten. An ObjectsRestored event
// names the objects another writer deleted or changed that this apply
// put back as the render says.
func (r *Reconciler) apply(ctx context.Context, obj *setv1.ObjectSet, st *state) error {
	st.removed = inventory.Removed(obj.Status.Inventory, st.render.objects)
	if err := r.guard(obj, st); err != nil {
		return err
	}
	w, err := r.writer(obj)
	if err != nil {
		return reconcile.Stalled(kustomizev1.ApplyFailedReason, err)
	}
	st.writer = w
	var unwatched []string
	for _, gvk := range distinctKinds(st.render.objects) {
		if err := r.children.watch(ctx, gvk); err != nil {
			// The objects are still applied; only a foreign change waits
			// for the next interval.
			var forbidden *forbiddenError
			if errors.As(err, &forbidden) {
				unwatched = append(unwatched, err.Error())
				continue
			}
			ctrl.LoggerFrom(ctx).Error(err, "objects of this kind written by others are restored only at the interval", "kind", gvk.Kind)
		}
	}
	r.recordUnwatched(obj, unwatched)
	key := client.ObjectKeyFromObject(obj)
	changes := r.children.changes(key)
	var restored []string
	had := map[object.ID]bool{}
	if obj.Status.Inventory != nil {
		for _, e := range obj.Status.Inventory.Entries {
			had[inventory.IDOf(e)] = true
		}
	}
	owner := metav1.OwnerReference{
		APIVersion: setv1.GroupVersion.String(), Kind: setv1.ObjectSetKind,
		Name: obj.Name, UID: obj.UID, Controller: ptr.To(true),
	}
	var applied []*unstructured.Unstructured
	for _, o := range st.render.objects {
		lbls := o.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[NameLabel], lbls[NamespaceLabel] = obj.Name, obj.Namespace
		o.SetLabels(lbls)
		o.SetOwnerReferences([]metav1.OwnerReference{owner})
		if err := w.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			obj.Status.Inventory = union(obj.Status.Inventory, applied)
			return reconcile.Failed(kustomizev1.ApplyFailedReason, fmt.Errorf("applying %s: %w", object.IDOf(o), err))
		}
		applied = append(applied, o)
		if !had[object.IDOf(o)] {
			st.created = append(st.created, object.IDOf(o).String())
		} else if why := restoredBy(changes, o); why != "" {
			restored = append(restored, object.IDOf(o).String()+" ("+why+")")
		}
	}
	r.children.applied(key, changes)
	if len(st.created) > 0 {
		r.Events.Record(obj, events.SeverityInfo, setv1.ObjectsCreatedReason,
			fmt.Sprintf("created %s", strings.Join(message.Names(st.created, 20), ", ")))
	}
	if len(restored) > 0 {
		r.Events.Record(obj, events.SeverityInfo, setv1.ObjectsRestoredReason,
			fmt.Sprintf("restored %s", strings.Join(message.Names(restored, 20), ", ")))
	}
	return nil
}

// recordUnwatched records a DriftUnwatched warning naming the kinds of
// the set's objects the controller may not watch (unwatched, the
// refusals), once: not again while Ready's message already names them
// (children.unwatched, which Ready's message ends with).
func (r *Reconciler) recordUnwatched(obj *setv1.ObjectSet, unwatched []string) {
	if len(unwatched) == 0 {
		return
	}
	msg := strings.Join(unwatched, "; ") + ": drift of these objects is not corrected until it may list and watch them; another writer's change is undone only at the next interval"
	if prev := conditions.Get(obj, meta.ReadyCondition); prev != nil && strings.Contains(prev.Message, "is not corrected until sync-controller may list and watch them") {
		return
	}
	r.Events.Record(obj, events.SeverityError, setv1.DriftUnwatchedReason, msg)
}

// restoredBy says what another writer had done to applied, an object
// just applied, when the apply undid it: deleted it, or changed a field
// the set sets (the apply then gave a new resourceVersion). "" when
// nobody had, or when the change touched only fields the set leaves
// alone (an annotation, a status).
func restoredBy(changes map[object.ID]change, applied *unstructured.Unstructured) string {
	ch, ok := changes[object.IDOf(applied)]
	switch {
	case !ok:
		return ""
	case ch.deleted:
		return "deleted"
	case applied.GetResourceVersion() != ch.resourceVersion:
		return "changed by " + ch.by
	}
	return ""
}

// distinctKinds returns the kinds of objs, each once, in order.
func distinctKinds(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}

// guard holds the render when the prune guard says so, unless the
// confirm-prune annotation names this render's digest. One PruneGuarded
// event per held render.
func (r *Reconciler) guard(obj *setv1.ObjectSet, st *state) error {
	if r.Guard == nil || len(st.removed) == 0 || obj.Status.Inventory == nil {
		return nil
	}
	total := len(obj.Status.Inventory.Entries)
	why := r.Guard(len(st.removed), total)
	if why == "" || obj.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation] == st.digest {
		return nil
	}
	names := make([]string, 0, len(st.removed))
	for _, o := range st.removed {
		names = append(names, object.IDOf(o).String())
	}
	msg := fmt.Sprintf("prune guard: this evaluation (%d elements) would prune %d of %d objects (%s): %s. Nothing was applied or deleted; "+
		"to go ahead, confirm this render with the annotation %s=%s",
		len(st.elements), len(st.removed), total, why, strings.Join(message.Names(names, 10), ", "),
		kustomizev1.ConfirmPruneAnnotation, st.digest)
	if prev := conditions.Get(obj, meta.ReadyCondition); prev == nil || prev.Reason != kustomizev1.PruneGuardedReason || prev.Message != msg {
		r.Events.Record(obj, events.SeverityError, kustomizev1.PruneGuardedReason, msg)
	}
	return reconcile.Failed(kustomizev1.PruneGuardedReason, errors.New(msg)).WithoutEvent()
}

// prune deletes the objects that left the set and still carry its
// labels (an object someone else took over is only forgotten), then
// records the new inventory. Ready=False (PruneFailed).
func (r *Reconciler) prune(ctx context.Context, obj *setv1.ObjectSet, st *state) error {
	var pruned, failed []string
	for _, stub := range st.removed {
		live := stub.DeepCopy()
		if err := st.writer.Get(ctx, client.ObjectKeyFromObject(stub), live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			failed = append(failed, fmt.Sprintf("%s: %v", object.IDOf(stub), err))
			continue
		}
		if l := live.GetLabels(); l[NameLabel] != obj.Name || l[NamespaceLabel] != obj.Namespace {
			continue
		}
		r.children.expectDeletion(live.GetUID())
		if err := st.writer.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: ptr.To(live.GetUID())}); client.IgnoreNotFound(err) != nil {
			r.children.notDeleting(live.GetUID())
			failed = append(failed, fmt.Sprintf("%s: %v", object.IDOf(stub), err))
			continue
		}
		pruned = append(pruned, object.IDOf(stub).String())
	}
	if len(pruned) > 0 {
		r.Events.Record(obj, events.SeverityInfo, setv1.ObjectsPrunedReason,
			fmt.Sprintf("pruned %s", strings.Join(message.Names(pruned, 20), ", ")))
	}
	if len(failed) > 0 {
		obj.Status.Inventory = union(inventory.New(st.render.objects), inventory.Objects(obj.Status.Inventory))
		return reconcile.Failed(kustomizev1.PruneFailedReason, fmt.Errorf("pruning: %s", strings.Join(message.Names(failed, 10), "; ")))
	}
	obj.Status.Inventory = inventory.New(st.render.objects)
	obj.Status.ElementDetails = st.render.elements
	return nil
}

// union is inv with objs added.
func union(inv *kustomizev1.Inventory, objs []*unstructured.Unstructured) *kustomizev1.Inventory {
	all := append(inventory.Objects(inv), objs...)
	seen := map[object.ID]bool{}
	var out []*unstructured.Unstructured
	for _, o := range all {
		if id := object.IDOf(o); !seen[id] {
			seen[id] = true
			out = append(out, o)
		}
	}
	return inventory.New(out)
}

// writer is the client that writes the set's objects: impersonating
// spec.serviceAccountName, else --default-service-account, else
// sync-controller's own. One client per ServiceAccount, kept: it holds
// no credentials of its own, the API server authorizes every request.
func (r *Reconciler) writer(obj *setv1.ObjectSet) (client.Client, error) {
	sa := cmp.Or(obj.Spec.ServiceAccountName, r.DefaultServiceAccount)
	if sa == "" {
		return r.Client, nil
	}
	user := "system:serviceaccount:" + obj.Namespace + ":" + sa
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: r.Scheme, Mapper: r.Client.RESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("a client acting as %s: %w", user, err)
	}
	if r.clients == nil {
		r.clients = map[string]client.Client{}
	}
	r.clients[user] = c
	return c, nil
}

// succeeded is Ready's message after a success.
func succeeded(obj *setv1.ObjectSet) string {
	n := 0
	if obj.Status.Inventory != nil {
		n = len(obj.Status.Inventory.Entries)
	}
	return fmt.Sprintf("applied %d objects for %d elements", n, obj.Status.Elements)
}

// NewMetrics registers the ObjectSets' per-object metrics with reg
// (plumb_sync_objectset_…, and Flux's gotk_* series with
// kind="ObjectSet").
func NewMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "sync_objectset", Kind: setv1.ObjectSetKind, Condition: meta.ReadyCondition, Toolkit: true,
	})
}
