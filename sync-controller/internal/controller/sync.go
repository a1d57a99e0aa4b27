package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/healthexpr"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/fight"
	"plumb.dev/sync-controller/internal/target"
)

// syncRun is one reconcile of one Kustomization or HelmRelease: the steps
// in run, and the status they build. It holds the run's inputs, what the
// steps make of the rendered artifact (the plan), the status, and the
// parts that keep their own books: what the applies did (tally), the sync
// operation (op), the status writes (status), the progress shown (prog)
// and the fights (fights).
type syncRun struct {
	r *Syncer
	// obj is the object as read, app its adapter, spec what the sync
	// reads of its spec and prev its sync status as stored; install:
	// nothing was applied successfully yet (application.install).
	obj     reconcile.Object
	app     application
	spec    syncSpec
	prev    syncStatus
	key     types.NamespacedName
	owner   manage.Owner
	install bool
	// start is when the run started; driftSeen when the watcher first saw
	// a foreign write to one of the objects since the last run, zero when
	// this run was not started by one.
	start, driftSeen time.Time
	// target is where and as whom the sync writes (see impersonate); its
	// engine acts there.
	target target.Target

	// The plan: the rendered artifact's revision and digest, its objects
	// as prepared (hashes: each one's hash as applied) and planned, and
	// the ignore rules of the applies.
	revision, digest string
	objs             []*unstructured.Unstructured
	hashes           map[object.ID]string
	plan             *plan.Plan
	ignorer          *diff.Ignorer
	// releaseArtifact gives back the run's share of Artifacts (nil: none
	// taken); reconcileObject calls it when the run ends.
	releaseArtifact func()
	// renderFailure is the Rendered=False condition of the current
	// generation: the sync goes on with the last good artifact, but Ready
	// reports the failure.
	renderFailure *metav1.Condition

	// out holds sync-controller's status fields as they will be written;
	// its conditions hold only sync-controller's condition types. st is
	// its sync status, written into it (outApp) before each status write.
	out    reconcile.Object
	outApp application
	st     syncStatus

	tally  tally         // what the applies did (tally.go)
	op     operation     // the sync operation (operation.go)
	status *statusWriter // writes out, with st, when it changed (statuswriter.go)
	prog   progress      // what the running sync shows of itself (progress.go)
	// fights holds back corrections of contested fields (internal/fight);
	// nil when fight detection is off.
	fights *fight.Run
	// rel is what a HelmRelease's run does with its release: attempt,
	// roll back, uninstall or hold (remediation.go); nil for a
	// Kustomization.
	rel *releaseRun
	// hold is the earlier render a rollback syncs instead of the newest
	// (hold.go); nil when none.
	hold *rollbackHold
	// window is what the sync windows hold back (syncwindow.go); nil
	// when inside them.
	window *windowHold
}

func newSyncRun(r *Syncer, obj reconcile.Object, start time.Time) *syncRun {
	app := appOf(obj)
	out := obj.DeepCopyObject().(reconcile.Object)
	conditions.Delete(out, kustomizev1.RenderedCondition)
	outApp := appOf(out)
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	driftSeen, _ := r.Engine.Watcher().TakeDriftStart(key)
	return &syncRun{
		r:         r,
		target:    target.Target{Engine: r.Engine},
		driftSeen: driftSeen,
		obj:       obj,
		app:       app,
		spec:      app.spec(),
		prev:      app.syncStatus(),
		key:       key,
		owner:     app.owner(),
		start:     start,
		out:       out,
		outApp:    outApp,
		status:    newStatusWriter(r, obj, app, out, start),
		st:        outApp.syncStatus(),
		install:   app.install(),
		tally:     newTally(),
	}
}

// steps are the run's steps, in order; the first error ends the run.
func (s *syncRun) steps() []reconcile.Step {
	steps := []reconcile.Step{
		{Name: "references", Run: s.checkReferences},
		{Name: "impersonate", Run: s.impersonate},
		{Name: "health-checks", Run: s.compileHealthChecks},
		{Name: "dependencies", Run: s.checkDependencies},
		{Name: "sync-window", Run: s.gateSyncWindow},
		{Name: "storage", Run: s.repairHelmStorage},
		{Name: "adopt", Run: s.adoptHelmRelease},
		{Name: "rollback", Run: s.holdRollback},
		{Name: "release", Run: s.decideRelease},
		{Name: "manifests", Run: s.loadManifests},
		{Name: "prepare", Run: s.prepare},
		{Name: "manual-sync", Run: s.manualSync},
		{Name: "shared", Run: s.refuseShared},
		{Name: "prune-guard", Run: s.guardPrune},
		{Name: "apply", Run: s.retried(s.ofOperation(s.applyPlan), false)},
		{Name: "prune", Run: s.retried(s.ofOperation(s.prune), false)},
		{Name: "health", Run: s.retried(s.ofOperation(s.checkHealth), true)},
		{Name: "tests", Run: s.runChartTests},
		{Name: "report", Run: s.report},
		{Name: "sync-window-hold", Run: s.holdForSyncWindow},
		{Name: "remediation", Run: s.remediationOutcome},
	}
	for i := range steps {
		run := steps[i].Run
		steps[i].Run = func(ctx context.Context) error {
			// The skeleton sums the run up from out: it must hold what
			// the step did to the sync status.
			defer func() { s.outApp.setSyncStatus(s.st) }()
			return s.r.targets.ExplainForbidden(ctx, s.target, run(ctx))
		}
	}
	return steps
}

// ofOperation keeps the error of a step of the sync operation and, once
// the operation failed or got through its last step (the health check,
// which sets synced), runs finish — after cleanupOnFail when a failed
// upgrade asks for it.
func (s *syncRun) ofOperation(step func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		err := step(ctx)
		if s.op.ends(err) {
			if err != nil && s.spec.Switches.CleanupOnFail {
				s.cleanupOnFail(ctx)
			}
			s.op.finish(ctx, s)
		}
		return err
	}
}

// checkReferences refuses, while --no-cross-namespace-refs is set, a
// dependsOn or healthChecks entry in another namespace. Sets Stalled=True
// and Ready=False reason InvalidSpec: only a spec change can fix it, so it
// is not retried. (sync-controller never reads spec.sourceRef;
// render-controller refuses a cross-namespace one under the same flag.)
func (s *syncRun) checkReferences(context.Context) error {
	if !s.r.NoCrossNamespaceRefs {
		return nil
	}
	refuse := func(field, ns, name string) error {
		return reconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf(
			"cross-namespace references are not allowed: %s %s/%s is outside namespace %s", field, ns, name, s.obj.GetNamespace()))
	}
	for _, dep := range s.spec.DependsOn {
		if dep.Namespace != "" && dep.Namespace != s.obj.GetNamespace() {
			return refuse("dependsOn", dep.Namespace, dep.Name)
		}
	}
	for _, hc := range s.spec.HealthChecks {
		if hc.Namespace != "" && hc.Namespace != s.obj.GetNamespace() {
			return refuse("healthChecks "+hc.Kind, hc.Namespace, hc.Name)
		}
	}
	return nil
}

// impersonate makes every later request to managed objects act as the
// Kustomization's ServiceAccount (spec.serviceAccountName, or
// --default-service-account), so the sync can do no more than the
// ServiceAccount may, and go to the remote cluster of spec.kubeConfig when
// it is set (internal/target: Ready=False KubeConfigInvalid or
// RemoteClusterUnreachable when it cannot). Reads of Kustomizations
// (dependsOn) and the status writes stay the controller's own, here.
func (s *syncRun) impersonate(ctx context.Context) error {
	t, err := s.r.targets.Resolve(ctx, targetOf(s.app))
	if err != nil {
		return err
	}
	s.target = t
	return nil
}

// compileHealthChecks makes every later health wait judge the kinds of
// spec.healthCheckExprs by their expressions (pkg/healthexpr). An
// expression that does not compile sets Stalled=True and Ready=False
// reason HealthCheckExprInvalid, with a warning event naming the entry and
// the parser's message: only a spec change can fix it, so it is not
// retried, and nothing is applied by a spec that cannot be waited on.
func (s *syncRun) compileHealthChecks(context.Context) error {
	checks, err := healthexpr.Compile(s.spec.HealthCheckExprs)
	if err != nil {
		return reconcile.Stalled(kustomizev1.HealthCheckExprInvalidReason, err)
	}
	s.target.Engine = s.target.Engine.WithHealthChecks(checks)
	return nil
}

// checkDependencies waits until every object in dependsOn (Kustomizations
// for a Kustomization, HelmReleases for a HelmRelease) is ready: Ready at
// its latest generation, or, for an entry with a readyExpr, as the
// expression says instead, as in Flux. Sets Ready=False reason
// DependencyNotReady, also when an expression fails on the dependency (a
// field it does not have yet). A readyExpr that does not compile sets
// Stalled=True and Ready=False reason InvalidCELExpression (Flux's),
// before any dependency is read: only a spec change can fix it.
func (s *syncRun) checkDependencies(ctx context.Context) error {
	exprs := make([]*healthexpr.ReadyExpr, len(s.spec.DependsOn))
	for i, dep := range s.spec.DependsOn {
		if dep.ReadyExpr == "" {
			continue
		}
		e, err := healthexpr.CompileReady(dep.ReadyExpr)
		if err != nil {
			return reconcile.Stalled(meta.InvalidCELExpressionReason, fmt.Errorf("dependsOn[%d] (%s): readyExpr %w", i, dep.Name, err))
		}
		exprs[i] = e
	}
	var self map[string]any
	for i, dep := range s.spec.DependsOn {
		ns := dep.Namespace
		if ns == "" {
			ns = s.obj.GetNamespace()
		}
		other := s.app.newEmpty().object()
		if err := s.r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: dep.Name}, other); err != nil {
			return reconcile.Waiting(meta.DependencyNotReadyReason, s.r.DependencyRequeue,
				fmt.Errorf("dependency %s/%s: %w", ns, dep.Name, err))
		}
		if exprs[i] == nil {
			if !conditions.IsReady(other) || other.GetObservedGeneration() != other.GetGeneration() {
				return reconcile.Waiting(meta.DependencyNotReadyReason, s.r.DependencyRequeue,
					fmt.Errorf("dependency %s/%s is not ready", ns, dep.Name))
			}
			continue
		}
		if self == nil {
			var err error
			if self, err = runtime.DefaultUnstructuredConverter.ToUnstructured(s.obj); err != nil {
				return err
			}
		}
		depFields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(other)
		if err != nil {
			return err
		}
		ready, err := exprs[i].Ready(self, depFields)
		switch {
		case err != nil:
			return reconcile.Waiting(meta.DependencyNotReadyReason, s.r.DependencyRequeue,
				fmt.Errorf("dependency %s/%s: readyExpr %q failed: %w", ns, dep.Name, dep.ReadyExpr, err))
		case !ready:
			return reconcile.Waiting(meta.DependencyNotReadyReason, s.r.DependencyRequeue,
				fmt.Errorf("dependency %s/%s is not ready according to its readyExpr", ns, dep.Name))
		}
	}
	return nil
}

// loadManifests downloads and verifies the rendered artifact, or takes it
// from memory when the digest is the one synced before. Sets Ready=False
// reason ArtifactFailed when the download fails; waits while
// render-controller has produced nothing for this Kustomization.
func (s *syncRun) loadManifests(ctx context.Context) error {
	rendered := conditions.Get(s.obj, kustomizev1.RenderedCondition)
	artifact := s.app.rendered()
	if rendered != nil && rendered.Status == metav1.ConditionFalse && rendered.ObservedGeneration == s.obj.GetGeneration() {
		s.renderFailure = rendered
	}
	if artifact == nil {
		if f := s.renderFailure; f != nil && f.Reason == meta.DependencyNotReadyReason {
			// render-controller waits for its source (no artifact yet): a
			// wait here too, as in Flux, logged as one and not as a failed
			// reconcile (an error-level line per Kustomization of a fleet
			// created before its GitRepository is ready). render-
			// controller's status update brings the object back; the
			// retry interval is the net for a missed one.
			return reconcile.Waiting(f.Reason, s.spec.RetryInterval, errors.New(f.Message))
		}
		if s.renderFailure != nil {
			// render-controller recorded this failure's event, a Warning
			// on the object and the stream's, or none for a wait
			// (DependencyNotReady: no source artifact yet). Recording it
			// again would be a second Kubernetes Event and a second alert
			// for one failed render (docs/design/events.md), as report
			// says for a render that fails after a good one.
			return reconcile.Failed(s.renderFailure.Reason, errors.New(s.renderFailure.Message)).WithoutEvent()
		}
		return s.waitForRender()
	}
	if rendered != nil && rendered.ObservedGeneration < s.obj.GetGeneration() {
		return s.waitForRender()
	}
	artifact = s.heldBack(artifact) // a sync window's (syncwindow.go)
	switch {
	case s.rel != nil && s.rel.action == rollbackRelease:
		// The rollback's render; lastAttempted* keep the failed attempt.
		artifact = s.rel.rollbackArtifact(artifact)
	case s.rel != nil && s.rel.action == correctRelease:
		// The deployed release's render, held back above: nothing is
		// attempted, so lastAttempted* stay.
	case s.hold != nil:
		// A Kustomization's rollback (hold.go): the newest render is held.
		artifact = s.hold.artifact
	default:
		s.st.LastAttemptedRevision = artifact.Revision
		s.outApp.attempted(artifact)
	}
	s.revision, s.digest = artifact.Revision, artifact.Digest
	if cached, ok := s.r.manifests.prepared(s.key, artifact.Digest, s.obj.GetGeneration()); ok {
		s.objs, s.hashes = cached.prepared, cached.hashes
		if cached.syncID == s.syncID() {
			s.plan = cached.plan
		}
		return nil
	}
	release, err := s.r.Artifacts.acquire(ctx, artifact.Size)
	if err != nil {
		return reconcile.Failed(meta.ArtifactFailedReason, err)
	}
	s.releaseArtifact = release // the run holds the objects until it ends
	objs, err := s.r.decodedArtifact(ctx, s.key, artifact)
	if err != nil {
		return reconcile.Failed(meta.ArtifactFailedReason, err)
	}
	s.objs = objs
	return nil
}

// decodedArtifact returns the objects of a rendered artifact, decoded from
// the bytes kept when the object's last download was this digest, else
// downloaded and verified (and the bytes kept). The caller holds its share of
// Artifacts. A download is cut at the announced size: the digest pins the
// bytes, so more would be refused anyway, and the share taken for the
// size is then what the download can take.
func (r *Syncer) decodedArtifact(ctx context.Context, key types.NamespacedName, artifact *meta.Artifact) ([]*unstructured.Unstructured, error) {
	if data, ok := r.manifests.artifact(key, artifact.Digest); ok {
		return object.DecodeManifests(data)
	}
	opts := r.Fetch
	announced := artifact.Size != nil && *artifact.Size >= 0 && opts.MaxSize > 0 && *artifact.Size < opts.MaxSize
	if announced {
		opts.MaxSize = max(*artifact.Size, 1)
	}
	data, err := fetch.Bytes(ctx, artifact.URL, artifact.Digest, opts)
	if announced && errors.Is(err, fetch.ErrTooLarge) {
		return nil, fmt.Errorf("refusing a tampered or partial artifact: %s is larger than the %d bytes its status announces", artifact.URL, *artifact.Size)
	}
	if err != nil {
		return nil, err
	}
	objs, err := object.DecodeManifests(data)
	if err != nil {
		return nil, err
	}
	r.manifests.putArtifact(key, artifact.Digest, data)
	return objs, nil
}

// waitForRender stops a run without failing it: render-controller has not
// rendered the current generation yet, and its status update brings the
// Kustomization back. Ready=Unknown, Reconciling=True (Progressing).
func (s *syncRun) waitForRender() error {
	return reconcile.Progressing(meta.ProgressingReason,
		fmt.Errorf("waiting for render-controller to render generation %d", s.obj.GetGeneration()))
}

// prepare checks the ignore rules, stamps ownership on every object,
// defaults namespaces and plans the sync (phases, waves, kind order). Sets Stalled=True reason InvalidSpec for a bad ignore
// rule (only a spec change can fix it).
func (s *syncRun) prepare(ctx context.Context) error {
	ig, err := diff.NewIgnorer(s.spec.Ignore)
	if err != nil {
		return reconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("%s: %w", s.app.ignoreField(), err))
	}
	s.ignorer = ig
	if s.plan != nil {
		return nil // prepared and planned by an earlier run of this sync operation
	}
	if s.hashes == nil {
		// Not prepared yet for this digest and generation; a new sync
		// operation of the same ones (a retry) only plans again, since its
		// hooks have names of their own.
		var created []string
		if s.spec.Switches.CreateNamespace {
			created = append(created, s.app.defaultNamespace())
		}
		s.objs = withCreatedNamespaces(s.objs, s.app.defaultNamespace(), created...)
		hashes, err := s.target.Engine.Prepare(s.objs, engine.Options{Owner: s.owner, DefaultNamespace: s.app.defaultNamespace()})
		if err != nil {
			return reconcile.Failed(kustomizev1.ApplyFailedReason, err)
		}
		s.hashes = hashes
	}
	rollback := s.rel != nil && s.rel.action == rollbackRelease
	p, err := plan.Build(s.objs, plan.Options{SyncID: s.syncID(), Install: s.install, Rollback: rollback})
	if err != nil {
		return reconcile.Failed(kustomizev1.ApplyFailedReason, err)
	}
	if rollback && !s.rel.rollbackHooks() {
		p = p.WithoutHooks()
	}
	s.plan = p
	s.r.manifests.putPrepared(s.key, s.digest, s.obj.GetGeneration(), s.syncID(), s.objs, s.hashes, p)
	return nil
}

// prune deletes objects that left the set, in reverse plan order, when
// spec.prune is set. It runs only after a complete, successful apply, so a
// failed render or apply never deletes anything, and after guardPrune let
// the sync through. Sets Ready=False reason
// PruneFailed, keeping what it could not delete in the inventory.
func (s *syncRun) prune(ctx context.Context) error {
	if !s.spec.Prune {
		return nil
	}
	removed := s.removedObjects()
	if len(removed) == 0 {
		return nil
	}
	stubs := make(map[object.ID]*unstructured.Unstructured, len(removed))
	for _, o := range removed {
		stubs[object.IDOf(o)] = o
	}
	var errs []error
	var names []string
	var kept []*unstructured.Unstructured
	for _, res := range s.target.Engine.PruneWith(ctx, plan.Flatten(plan.PruneOrder(removed)), s.owner, manage.LeftTheSet, s.spec.PrunePropagation) {
		switch {
		case res.Err != nil:
			errs = append(errs, res.Err)
			kept = append(kept, stubs[res.ID])
		case res.Deleted:
			names = append(names, res.ID.String())
		}
	}
	if len(names) > 0 {
		s.r.Metrics.handled(string(diff.Deleted), len(names))
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.PrunedReason,
			fmt.Sprintf("pruned %d object(s): %s", len(names), strings.Join(message.Names(names, 10), ", ")),
			events.WithRevision(s.revision))
	}
	if err := errors.Join(errs...); err != nil {
		// What could not be pruned stays in the inventory, so the next run
		// tries again (and a deletion of the Kustomization still prunes it).
		s.st.Inventory = mergeInventories(s.st.Inventory, kept)
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.PruneFailedReason, err.Error(), events.WithRevision(s.revision))
		return reconcile.Failed(kustomizev1.PruneFailedReason, err).WithoutEvent()
	}
	return nil
}

// checkHealth sets the Healthy condition. With spec.wait it waits until
// every applied object, and every object in spec.healthChecks, is healthy at
// its current generation, bounded by spec.timeout, and fails fast on a
// Degraded object; without wait only the healthChecks are waited on. Sets
// Healthy and, on failure, Ready=False reason HealthCheckFailed.
func (s *syncRun) checkHealth(ctx context.Context) error {
	var objs []*unstructured.Unstructured
	if s.spec.Wait {
		objs = s.waitedOn(s.inventoryObjects())
	}
	checks, err := s.healthCheckObjects()
	if err != nil {
		return reconcile.Failed(kustomizev1.HealthCheckFailedReason, err).WithoutEvent()
	}
	objs = append(objs, checks...)
	if len(objs) == 0 {
		conditions.Delete(s.out, kustomizev1.HealthyCondition)
		s.op.synced = s.op.made
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.spec.Timeout)
	defer cancel()
	s.prog.phase, s.prog.waiting = "", nil
	if _, err := s.target.Engine.WaitHealthy(ctx, objs, s.tally.applied, s.healthProgress(ctx)); err != nil {
		wasHealthy := conditions.IsTrue(s.out, kustomizev1.HealthyCondition)
		conditions.MarkFalse(s.out, kustomizev1.HealthyCondition, kustomizev1.HealthCheckFailedReason, "%s", err.Error())
		if wasHealthy {
			msg, detail := eventOf(err)
			s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.HealthDegradedReason, msg, events.WithRevision(s.revision), detail)
		}
		return reconcile.Failed(kustomizev1.HealthCheckFailedReason, err).WithoutEvent()
	}
	if conditions.IsFalse(s.out, kustomizev1.HealthyCondition) {
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.HealthRecoveredReason, "all objects are healthy", events.WithRevision(s.revision))
	}
	conditions.MarkTrue(s.out, kustomizev1.HealthyCondition, meta.SucceededReason, "all %d objects are healthy", len(objs))
	s.op.synced = s.op.made
	return nil
}

// eventOf returns the message of the event that reports err, and its
// volatile details. A failure retried every retryInterval is recorded on
// every retry, and notification-controller alerts it once per
// --rate-limit-interval only while the events are equal, so what changes
// between attempts of the same failure is kept out of the message: a
// health timeout is reported by the objects and their status ("timed out
// waiting for health: Deployment/apps/web is Progressing"), a Degraded
// object without what its Pods say, and where each stood ("2 of 3 updated
// replicas available", "Pod web-1 … 5 restarts") goes into the volatile
// metadata key "health" (pkg/events, VolatilePrefix). The condition keeps
// the whole text.
func eventOf(err error) (string, events.Option) {
	msg := err.Error()
	var summarized interface {
		error
		Summary() string
	}
	var timeout *engine.HealthTimeoutError
	var degraded *engine.HealthDegradedError
	switch {
	case errors.As(err, &timeout):
		summarized = timeout
	case errors.As(err, &degraded) && degraded.Pods != "":
		// What the Pods say (restart counts) changes between attempts.
		summarized = degraded
	default:
		return msg, events.WithVolatile(nil)
	}
	// Wrapping (%w) keeps the wrapped error's text whole, so it is found
	// and replaced by its summary.
	full := summarized.Error()
	return strings.Replace(msg, full, summarized.Summary(), 1), events.WithVolatile(map[string]string{"health": full})
}

// healthCheckObjects returns stubs of the objects named in spec.healthChecks.
func (s *syncRun) healthCheckObjects() ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(s.spec.HealthChecks))
	for _, ref := range s.spec.HealthChecks {
		obj := object.Stub(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
		if err := s.target.Engine.Resolve(obj, s.obj.GetNamespace()); err != nil {
			return nil, fmt.Errorf("spec.healthChecks: %w", err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// report records the revision the run applied. When render-controller
// failed on the current generation, the last good revision stays applied
// and Ready reports the failure: Ready=False with render-controller's
// reason (no event: render-controller recorded its own), retried after
// spec.retryInterval.
func (s *syncRun) report(context.Context) error {
	s.st.LastAppliedRevision = s.revision
	if f := s.renderFailure; f != nil {
		return reconcile.Failed(f.Reason,
			fmt.Errorf("%s (still applying the last good revision %s)", f.Message, s.revision)).WithoutEvent()
	}
	return nil
}

// removedObjects are stubs of the inventory's entries that the render no
// longer has: what prune deletes and the prune guard counts. An object the
// render still has is never among them, whatever its annotations: a hook
// (which is not in the new inventory) included. An object can turn into a
// hook without anyone meaning to delete it — `helm template` output in Git
// that Plumb once applied as ordinary objects and now reads as Helm hooks,
// a CRD annotated helm.sh/hook: crd-install above all, whose deletion
// would take every custom resource of its kind with it — so only leaving
// the render deletes.
func (s *syncRun) removedObjects() []*unstructured.Unstructured {
	return inventory.Removed(s.prev.Inventory, s.objs)
}

// inventoryObjects are the desired objects that are not hooks.
func (s *syncRun) inventoryObjects() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(s.objs))
	for _, o := range s.objs {
		if !plan.IsHook(o) {
			out = append(out, o)
		}
	}
	return out
}
