package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/fluxport"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/healthexpr"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/panics"
)

// Engine applies sets of objects; one Engine serves every Kustomization.
type Engine struct {
	// client makes every request to managed objects: reads, dry-runs,
	// applies, deletes. As swaps it for a Kustomization's identity.
	client client.Client
	// identity names who client acts as; health results are remembered per
	// identity, so one identity never learns from another's reads.
	identity    string
	mapper      apimeta.RESTMapper
	watcher     *Watcher
	records     *records
	health      *healthCache
	concurrency int

	// checks judge health where a Kustomization's healthCheckExprs has an
	// entry for the kind; nil is pkg/health alone. WithHealthChecks sets it.
	checks *healthexpr.Checks
}

// New returns an engine writing through c (which must not cache
// unstructured objects) with at most concurrency applies in flight.
func New(c client.Client, mapper apimeta.RESTMapper, watcher *Watcher, concurrency int) *Engine {
	if concurrency < 1 {
		concurrency = 1
	}
	return &Engine{client: c, mapper: mapper, watcher: watcher, records: newRecords(), health: &healthCache{}, concurrency: concurrency}
}

// As returns an engine that makes every request to managed objects —
// reads, dry-runs, applies, prunes, health reads and hooks — with c, a
// client acting as identity (sync-controller passes one that impersonates
// a Kustomization's ServiceAccount). It shares the watcher, whose cache
// keeps reading with the controller's own identity and never writes, and
// what the engine remembers of applied objects. An empty identity is the
// controller's own, and returns e.
func (e *Engine) As(identity string, c client.Client) *Engine {
	if identity == "" {
		return e
	}
	scoped := *e
	scoped.client, scoped.identity = c, identity
	return &scoped
}

// WithHealthChecks returns an engine whose health waits judge objects by
// checks (a Kustomization's spec.healthCheckExprs) where they have an entry
// for the kind, and by pkg/health otherwise. Nil checks return e.
func (e *Engine) WithHealthChecks(checks *healthexpr.Checks) *Engine {
	if checks == nil {
		return e
	}
	scoped := *e
	scoped.checks = checks
	return &scoped
}

// ForCluster returns an engine for another cluster: c and mapper reach it,
// w watches it (Watcher.ForCluster). It keeps e's settings and nothing of
// what e remembers of applied objects or health, which belongs to e's
// cluster: an object of the same name in two clusters is two objects.
func (e *Engine) ForCluster(c client.Client, mapper apimeta.RESTMapper, w *Watcher) *Engine {
	return New(c, mapper, w, e.concurrency)
}

// Watcher returns the engine's watcher.
func (e *Engine) Watcher() *Watcher { return e.watcher }

// Options shape one ApplySet call.
type Options struct {
	// Owner is stamped on every object as labels.
	Owner manage.Owner
	// DefaultNamespace is given to namespaced objects without one.
	DefaultNamespace string
	// Ignore removes fields from comparison and keeps their live values.
	Ignore *diff.Ignorer
	// ReportOnly computes the diff of existing objects but writes nothing to
	// them; objects that do not exist are still created.
	ReportOnly bool
	// Preview writes nothing at all (a manual sync's comparison): a
	// missing object is reported Created without a request, an existing
	// one is compared by a dry-run, as ReportOnly does.
	Preview bool
	// Force deletes and recreates an object whose immutable fields changed.
	Force bool
	// Guard, when set, may hold back the correction of drift (see
	// DriftGuard); nil reverts every drift at once.
	Guard DriftGuard
	// NotWaitedOn says that nothing judges the health of what this call
	// writes from its answers: no health wait follows it in the run (no
	// spec.wait, no later wave, no health check naming its objects, no
	// CRD to see established). Every write is then answered with the
	// object's metadata only (answerIsMetadata), a Deployment's too: the
	// API server encodes, and this process decodes, no spec or status.
	// A health wait given such an answer reads the object again
	// (WaitHealthy), so a caller that waits after all is slower, never
	// wrong.
	NotWaitedOn bool
}

// DriftGuard decides whether drift is reverted now. sync-controller's fight
// detection implements it: a field that another manager keeps rewriting is
// corrected with a backoff. It is called concurrently.
type DriftGuard interface {
	// Wait is asked, before any request, about an existing object whose
	// cached metadata shows a change since it was last applied or checked;
	// true skips the object in this run (its correction is held back for
	// the desired state hash).
	Wait(id object.ID, hash string) bool
	// Revert is asked about an object a dry-run found drifted, with the
	// drift's changes and foreign managers in res; false leaves the object
	// as it is for now.
	Revert(res Result) bool
}

// Result is the outcome for one object.
type Result struct {
	ID     object.ID
	Action diff.Action
	// Changes are the field differences found by a dry-run (Configured only).
	Changes []diff.Change
	// Object is the object as the API server returned it after the write or
	// the dry-run; nil when nothing was requested. A write of a kind whose
	// health is told by its existence (answerIsMetadata: a ConfigMap, a
	// headless Service…) returns only its apiVersion, kind and metadata
	// (metadataOnly), all that its health and the run's tally read.
	Object *unstructured.Unstructured
	// Drift is true when an existing object differed from Git.
	Drift bool
	// Managers are the field managers other than plumb-sync that own a
	// drifted field (Drift only): who made the drift.
	Managers []string
	// FieldManagers names, by the path of each drifted field (Changes),
	// the foreign manager that owns its live value (Drift only; a field
	// nobody owns, one that was removed, is absent). It is read before the
	// revert, which gives the fields back to plumb-sync.
	FieldManagers map[string]string
	// Held is true when the Guard held the object's correction back: the
	// object was skipped (Wait) or its drift left in place (Revert).
	Held bool
	// Written is true when the object was written.
	Written bool
	// Excluded names the label or annotation that kept the object from
	// any write (manage.Excluded: Flux's reconcile: disabled or ssa:
	// Ignore, on the object in Git or in the cluster); empty otherwise.
	Excluded string
	Err      error
}

// Prepare fills in defaults (namespace) and the ownership stamp of each
// object, in place, and checks that the kinds exist. It returns the objects'
// hashes by id.
func (e *Engine) Prepare(objs []*unstructured.Unstructured, opts Options) (map[object.ID]string, error) {
	hashes := make(map[object.ID]string, len(objs))
	defined := definedKinds(objs)
	mapper := &preparedMappings{RESTMapper: e.mapper, mappings: map[mappingKey]*apimeta.RESTMapping{}}
	for _, obj := range objs {
		if err := manage.Resolve(mapper, obj, opts.DefaultNamespace); err != nil {
			// A custom resource whose CRD is in the same set: the CRD is
			// applied first, and its scope says about the namespace.
			scope, ok := defined[obj.GroupVersionKind().GroupKind()]
			if !ok && SkipsDryRunWhenKindMissing(obj) {
				// Taken for namespaced, as custom resources mostly are;
				// the apply in its wave finds out.
				ok, scope = true, "Namespaced"
			}
			if !ok || !apimeta.IsNoMatchError(errors.Unwrap(err)) {
				return nil, err
			}
			if scope != "Namespaced" {
				obj.SetNamespace("")
			} else if obj.GetNamespace() == "" {
				obj.SetNamespace(opts.DefaultNamespace)
			}
		}
		hash, err := manage.Stamp(obj, opts.Owner)
		if err != nil {
			return nil, err
		}
		hashes[object.IDOf(obj)] = hash
	}
	return hashes, nil
}

// preparedMappings keeps the REST mappings found in one Prepare: a thousand
// objects are of a handful of kinds, and every lookup in the lazy mapper
// allocates (errors and all: a tenth of the initial sync's allocations).
// Only what one Prepare found is kept, so a kind served later (its CRD
// applied in an earlier wave) is looked up anew by the next one.
type preparedMappings struct {
	apimeta.RESTMapper
	mappings map[mappingKey]*apimeta.RESTMapping
}

type mappingKey struct {
	kind    schema.GroupKind
	version string
}

func (m *preparedMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	if len(versions) > 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{kind: gk}
	if len(versions) == 1 {
		key.version = versions[0]
	}
	if mapping, ok := m.mappings[key]; ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mappings[key] = mapping
	}
	return mapping, err
}

// Resolve checks that obj's kind is served and sets its version and
// namespace; see manage.Resolve.
func (e *Engine) Resolve(obj *unstructured.Unstructured, defaultNamespace string) error {
	return manage.Resolve(e.mapper, obj, defaultNamespace)
}

// ApplySet brings every object of the set to its desired state, concurrently
// up to the engine's bound, and returns a result per object in input order.
// Objects must have been through Prepare. The error joins the per-object
// errors.
func (e *Engine) ApplySet(ctx context.Context, objs []*unstructured.Unstructured, hashes map[object.ID]string, opts Options) ([]Result, error) {
	for _, gvk := range distinctKinds(objs) {
		if err := e.watcher.Watch(ctx, gvk); err != nil {
			return nil, err
		}
	}
	results := make([]Result, len(objs))
	sem := make(chan struct{}, e.concurrency)
	var wg sync.WaitGroup
	for i, obj := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// The objects come from Git: a panic on one fails that object,
			// not the process.
			results[i].ID = object.IDOf(obj)
			defer panics.Recover(&results[i].Err, "apply")
			results[i] = e.applyOne(ctx, obj, hashes[results[i].ID], opts)
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return results, errors.Join(errs...)
}

// applyOne is the per-object decision described in the package doc.
func (e *Engine) applyOne(ctx context.Context, desired *unstructured.Unstructured, hash string, opts Options) Result {
	id := object.IDOf(desired)
	res := Result{ID: id, Action: diff.Unchanged}
	live, err := e.watcher.Lookup(ctx, desired.GroupVersionKind(), desired.GetNamespace(), desired.GetName())
	if err != nil {
		res.Err = fmt.Errorf("%s: reading the watch cache: %w", id, err)
		return res
	}
	if why := excluded(desired, live); why != "" {
		res.Excluded = why
		return res
	}
	if opts.Preview && (live == nil || IfNotPresent(desired)) {
		if live == nil {
			res.Action = diff.Created
		}
		return res
	}
	if IfNotPresent(desired) {
		return e.createIfNotPresent(ctx, desired, hash, live, res)
	}
	tookBack := false
	if !opts.Preview {
		tookBack, err = e.takeBackIfAsked(ctx, desired, live)
	}
	if err != nil {
		res.Err = e.explain(id, err)
		return res
	}
	if live != nil && !tookBack && e.unchanged(id, hash, live) {
		return res
	}
	if live != nil && driftDetectionOff(opts, desired, live, hash) {
		return res
	}
	if live == nil {
		res.Action = diff.Created
		return e.write(ctx, desired, live, hash, opts, res)
	}
	if opts.Guard != nil && opts.Guard.Wait(id, hash) {
		res.Held = true
		return res
	}

	// The object exists and something may differ: compare what the server
	// would store (a dry-run apply) with what it stores now.
	cmp, err := drift.Compare(ctx, e.client, desired, opts.Ignore)
	switch {
	case err != nil && cmp.Live == nil:
		res.Err = fmt.Errorf("reading the live object: %w", e.explain(id, err))
		return res
	case cmp.Live == nil:
		res.Action = diff.Created
		if opts.Preview {
			return res
		}
		return e.write(ctx, desired, live, hash, opts, res)
	case err != nil:
		if isImmutable(err) && opts.Preview {
			// A sync would recreate it (with force) or fail on it.
			res.Action = diff.Configured
			return res
		}
		if isImmutable(err) && !opts.ReportOnly {
			// A change the server refuses in place: write decides whether
			// force allows a recreate.
			res.Action, res.Drift = diff.Configured, live.Annotations[manage.AppliedHashAnnotation] == hash
			return e.write(ctx, cmp.Desired, live, hash, opts, res)
		}
		res.Err = e.explain(id, err)
		return res
	}
	// Ignored fields keep their live values (cmp.Desired), and so does the
	// write below.
	current, desired, d := cmp.Live, cmp.Desired, cmp.Result
	if d.Action == diff.Unchanged {
		e.records.put(id, recordOf(hash, current))
		res.Object = current
		return res
	}
	// It is drift when the desired state is the one we applied last: the
	// difference came from the cluster, not from Git.
	res.Action, res.Changes = diff.Configured, d.Changes
	res.Drift = current.GetAnnotations()[manage.AppliedHashAnnotation] == hash
	if res.Drift {
		owners := drift.ForeignManagersOf(current.GetManagedFields())
		res.Managers = owners.Owning(d.Changes)
		res.FieldManagers = make(map[string]string, len(d.Changes))
		for _, c := range d.Changes {
			if m := owners.Of(c.Path); m != "" {
				res.FieldManagers[c.Path] = m
			}
		}
	}
	if opts.ReportOnly || opts.Preview {
		res.Object = current
		return res
	}
	if res.Drift && opts.Guard != nil && !opts.Guard.Revert(res) {
		res.Object, res.Held = current, true
		return res
	}
	return e.write(ctx, desired, live, hash, opts, res)
}

// IfNotPresent reports whether obj asks to be created when missing and
// never changed once it exists (manage.CreateOnly: plumb.dev/ssa or
// Flux's ssa: IfNotPresent).
func IfNotPresent(obj *unstructured.Unstructured) bool {
	return manage.CreateOnly(obj) != ""
}

// createIfNotPresent creates an IfNotPresent object that does not exist
// and leaves one that does as it is: no update, no dry-run, no drift. The
// watch cache sees only objects with our labels, so an object missing
// there may still exist (created by someone else, Helm's CRDs typically):
// a create, not an apply, finds out atomically, and its AlreadyExists is
// no error.
//
// The watch cache reads with the controller's identity. An engine acting as
// a ServiceAccount (As) does not take it as proof that the object exists:
// that would let a sync report as applied an object its ServiceAccount may
// not even read (a tenant's chart naming a cluster's CRD). It reads the
// object as the ServiceAccount first, one metadata GET, so a ServiceAccount
// that may read but not create an existing object is not refused, and one
// that may not read it is.
func (e *Engine) createIfNotPresent(ctx context.Context, desired *unstructured.Unstructured, hash string, live *metav1.PartialObjectMetadata, res Result) Result {
	if e.identity == "" && live != nil {
		return res
	}
	if e.identity != "" {
		existing := metadataObject(desired.GroupVersionKind())
		err := e.client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		switch {
		case err == nil:
			return res
		case !apierrors.IsNotFound(err):
			res.Err = e.explain(res.ID, err)
			return res
		}
	}
	obj := desired.DeepCopy()
	obj.SetResourceVersion("")
	err := e.client.Create(ctx, obj, client.FieldOwner(manage.FieldManager))
	switch {
	case apierrors.IsAlreadyExists(err):
		return res
	case err != nil:
		res.Err = e.explain(res.ID, err)
		return res
	}
	e.records.put(res.ID, recordOf(hash, obj))
	res.Action, res.Object, res.Written = diff.Created, obj, true
	return res
}

// unchanged reports whether the cached metadata proves that the object is as
// we left it for the same desired state.
func (e *Engine) unchanged(id object.ID, hash string, live *metav1.PartialObjectMetadata) bool {
	if rec, ok := e.records.get(id); ok {
		return rec == recordOf(hash, live)
	}
	// After a restart: the annotation says what we applied last, and the
	// managed fields say nobody wrote after us.
	return live.Annotations[manage.AppliedHashAnnotation] == hash && ourWriteIsNewest(live.ManagedFields)
}

// write applies desired for real, recreating it when an immutable field
// changed and force is allowed (mayRecreate, which reads live, the watch
// cache's metadata, nil when the object is not there).
func (e *Engine) write(ctx context.Context, desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata, hash string, opts Options, res Result) Result {
	stored, err := e.apply(ctx, desired, opts)
	if err != nil && isImmutable(err) {
		if !mayRecreate(opts, desired, live) {
			res.Err = fmt.Errorf("%s: %s; set spec.force or the annotation plumb.dev/force: enabled to recreate it", res.ID, immutableMessage(err))
			return res
		}
		stored, err = e.recreate(ctx, desired, opts)
	}
	if err != nil {
		res.Err = e.explain(res.ID, err)
		return res
	}
	if res.Action == diff.Created && !createdByUs(stored.meta.GetManagedFields()) {
		res.Action = diff.Configured
	}
	e.records.put(res.ID, recordOf(hash, stored.meta))
	res.Object, res.Written = stored.object, true
	return res
}

// answer is what the API server answered a write with: the object, whole
// or its metadata only (answerIsMetadata), and its metadata to remember.
type answer struct {
	object *unstructured.Unstructured
	meta   metav1.Object
}

// apply server-side-applies desired as plumb-sync, or writes it whole
// when it asks to be replaced. desired is not changed. The answer is
// asked for as metadata only where that is all a caller reads of it
// (answerIsMetadata): the API server then encodes, and this process
// decodes, no spec or data, and nothing is copied.
func (e *Engine) apply(ctx context.Context, desired *unstructured.Unstructured, opts Options) (answer, error) {
	if !replaces(desired) && e.answerIsMetadata(desired, opts.NotWaitedOn) {
		stored, err := manage.ApplyMetadata(ctx, e.client, desired)
		if err != nil {
			return answer{}, err
		}
		return answer{object: metadataOnly(desired, stored), meta: stored}, nil
	}
	obj := desired.DeepCopy()
	err := e.applyWhole(ctx, obj)
	return answer{object: obj, meta: obj}, err
}

// applyWhole server-side-applies obj in place as plumb-sync (manage.Apply),
// or writes it whole when it asks to be replaced; obj holds the answer.
func (e *Engine) applyWhole(ctx context.Context, obj *unstructured.Unstructured) error {
	if replaces(obj) {
		return e.replace(ctx, obj)
	}
	return manage.Apply(ctx, e.client, obj)
}

// recreate deletes the object, waits until it is gone, and applies it anew.
func (e *Engine) recreate(ctx context.Context, desired *unstructured.Unstructured, opts Options) (answer, error) {
	old := desired.DeepCopy()
	if err := e.client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return answer{}, err
	}
	if err := e.waitGone(ctx, old); err != nil {
		return answer{}, err
	}
	return e.apply(ctx, desired, opts)
}

// Forget drops what the engine remembers of the objects, e.g. after pruning.
func (e *Engine) Forget(ids ...object.ID) {
	for _, id := range ids {
		e.records.forget(id)
	}
}

// explain turns an API error into a message that names the object, and a
// refusal into who may not do what (see Forbidden).
func (e *Engine) explain(id object.ID, err error) error {
	if apierrors.IsNotFound(err) && id.Namespace != "" {
		return fmt.Errorf("%s: %w (does the namespace %s exist?)", id, err, id.Namespace)
	}
	if ferr := Forbidden(id, err); ferr != nil {
		return ferr
	}
	if why := portingReason(id, err); why != "" {
		return fmt.Errorf("%s: %w (%s)", id, err, why)
	}
	return fmt.Errorf("%s: %w", id, err)
}

// portingReason says why the API server refused a field of one of Plumb's
// own kinds when it is a field of Flux's that Plumb lacks (api/fluxport):
// a repository ported from Flux meets these, and the server's message
// names the field but not why it is missing.
func portingReason(id object.ID, err error) string {
	if id.Group != "plumb.dev" && !strings.HasSuffix(id.Group, ".plumb.dev") {
		return ""
	}
	return fluxport.Explain(id.Kind, err.Error())
}

func isImmutable(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	return strings.Contains(err.Error(), "immutable")
}

// immutableMessage names the immutable fields the error reports.
func immutableMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		var fields []string
		for _, c := range status.Status().Details.Causes {
			if strings.Contains(c.Message, "immutable") {
				fields = append(fields, c.Field)
			}
		}
		if len(fields) > 0 {
			sort.Strings(fields)
			return "immutable field " + strings.Join(fields, ", ") + " changed"
		}
	}
	return err.Error()
}

// createdByUs reports whether the object's only writer is plumb-sync, i.e.
// our apply created it, by its managedFields.
func createdByUs(entries []metav1.ManagedFieldsEntry) bool {
	for _, m := range entries {
		if m.Subresource == "" && m.Manager != manage.FieldManager {
			return false
		}
	}
	return true
}

// definedKinds returns the kinds that CRDs in objs define, with their scope.
func definedKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		out[schema.GroupKind{Group: group, Kind: kind}] = scope
	}
	return out
}

// WaitServed waits until the REST mapper resolves every kind the CRDs
// define, so custom resources of a CRD applied moments ago can be applied
// and watched.
func (e *Engine) WaitServed(ctx context.Context, crds []*unstructured.Unstructured) error {
	for gk := range definedKinds(crds) {
		for {
			_, err := e.mapper.RESTMapping(gk)
			if err == nil {
				break
			}
			if !apimeta.IsNoMatchError(err) {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for the API server to serve %s: %w", gk, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
