// Package controller holds sync-controller's reconcilers: Kustomization and
// HelmRelease, one sync for both.
//
// # Two kinds, one sync
//
// KustomizationReconciler and HelmReleaseReconciler each embed a Syncer
// (syncer.go: clients, engine, events, settings, what a sync keeps in
// memory) and run the same reconcile (reconcileObject: deletion — delete
// hooks, prune — and finalizer, suspension, then syncRun's steps on
// pkg/reconcile's skeleton, built once by SetupWithManager: newSkeleton).
// The steps never see the kind: they read the object through application
// (application.go), whose adapters give the sync spec (prune, wait, force,
// timeout, intervals, serviceAccountName, dependsOn, healthChecks, drift
// policy and ignore rules, the prune guard's fields), the status fields
// both kinds share, the owner (manage.Owner, whose kind picks the
// ownership labels) and whether the object installs (nothing applied
// successfully yet: pkg/plan runs Helm's install hooks then). A
// HelmRelease's sync spec is Helm's: prune and wait always (with the
// prune guard at sync-controller's thresholds), healthCheckExprs and
// kubeConfig as a Kustomization's, no healthChecks, no force, retries
// after spec.interval (strategy.retryInterval under RetryOnFailure), drift
// from driftDetection (enabled: Correct, warn: Report, disabled: a sync
// that succeeded is not re-applied until the render or spec changes),
// and the switches of the action it makes, install's or upgrade's
// (actionswitches.go: timeout, disableHooks, disableWait,
// disableWaitForJobs, createNamespace, upgrade.force and cleanupOnFail,
// the last in cleanuponfail.go).
// On top, recordRelease writes its history and Released condition from
// the outcome of the run's sync operation (helmrelease_controller.go),
// and its release lifecycle decides, after a failed install or upgrade,
// to retry it, roll back (the newest deployed release's render synced
// again with its rollback hooks) or uninstall (the deletion's steps), or
// to hold: decideRelease, countAttempt and remediationOutcome
// (remediation.go), rollback.go, uninstall.go;
// and the release's record into Helm's storage (helmstorage.go,
// internal/helmstorage: revision = history version, continuing Helm's
// numbering on adoption — the step adoptHelmRelease records a release
// Helm's storage holds as history[0] and waits for render-controller's
// upgrade render instead of applying an install's (helmadopt.go) —, trimmed to spec.maxHistory, moved when
// spec.storageNamespace changes, deleted with the HelmRelease; a failure
// is a StorageFailed warning and StorageFailed=True, not a failed
// release, and the step repairHelmStorage writes or moves them again at
// the next reconcile); a
// Kustomization's recordSync writes its history, Flux's shape, one entry
// per render digest (history.go). Both bound it with boundHistory.
//
// Each reconciler has its own engine and watcher (engine.NewWatcherFor):
// the watcher sees only objects with its kind's name label
// (kustomize.plumb.dev/name, helm.plumb.dev/name) and wakes only its own
// controller, so a Kustomization and a HelmRelease of one name in one
// namespace never prune, correct or wake on each other's objects. Before
// /readyz says ready, each reconciler starts its watcher's informers for
// the kinds its owners' stored inventories name (startupwatches.go), so
// that a foreign edit right after a restart is a watch event, queued
// ahead of the owners' start-up reconciles. The
// cache of clients (target.Clients) is shared, keyed by owner (kind
// included); each reconciler resolves its objects' targets with a
// target.Resolver of its own, over its own engine.
//
// sync-controller owns these status fields of a Kustomization and writes
// them by server-side apply under the field manager plumb-sync (an
// inventory of more than 100 entries under plumb-sync-inventory), and only
// when they changed:
// observedGeneration, the conditions Ready, Reconciling, Stalled, Healthy,
// Drifted, DriftContested and OutOfSync, lastAppliedRevision, lastAttemptedRevision, history, inventory,
// drift, sync, retry (a Kustomization's only), lastHandledReconcileAt, lastHandledSyncAt and
// outOfSync; of a HelmRelease the same (its
// history is Helm's releases, with their chart tests), plus Released,
// Remediated, TestSuccess, StorageFailed, lastAttemptedConfigDigest,
// lastAttemptedRevisionDigest, storageNamespace,
// lastAttemptedGeneration, lastAttemptedDigest,
// lastAttemptedReleaseAction(Duration) and the failure counters. render-controller owns
// renderedArtifact (and a HelmRelease's helmChart) and the Rendered
// condition; Ready summarizes both.
//
// # The steps of a sync
//
// syncRun.steps: checkReferences, impersonate, compileHealthChecks (the
// spec.healthCheckExprs of a Kustomization or HelmRelease, pkg/healthexpr: every later health
// wait judges their kinds by them; one that does not compile stalls the
// object, reason HealthCheckExprInvalid), checkDependencies (a
// dependsOn[].readyExpr, pkg/healthexpr's CompileReady, decides instead of
// Ready; one that does not compile stalls the object, reason
// InvalidCELExpression), gateSyncWindow (syncwindow.go: outside the
// object's sync windows — spec.syncWindows and the SyncWindowPolicies that
// select it, pkg/syncwindow — a new render is held: a Kustomization
// applies its last synced render instead, a HelmRelease its deployed
// release's (decideRelease's correctRelease: no release, no hook), so
// drift is still corrected, or only reported under a window with
// driftCorrection: false, and holdForSyncWindow, after report, ends the
// run Ready=False reason OutsideSyncWindow naming the held revision and
// when the windows open, requeued then; an object that never synced, or
// a HelmRelease whose newest release is not deployed, stops at the gate;
// a rollback not applied yet or a Manual object's sync request
// is a manual sync, let through only by windows with manualSync —
// nextRender, docs/design/sync-engine.md "How the holds combine"; a
// window that does not parse stalls it, SyncWindowInvalid;
// status.syncWindow), repairHelmStorage (a HelmRelease's: Helm's
// storage brought up to date with what an earlier run could not write,
// helmstorage.go), decideRelease (a HelmRelease's: attempt, roll
// back, uninstall, hold, or correct the deployed release while a window
// holds the newest render; remediation.go), loadManifests (a rollback's
// or a window's render instead of the newest), prepare, manualSync (manualsync.go: with
// spec.syncPolicy Manual a render is compared by a dry-run that writes
// nothing, reported in OutOfSync and status.outOfSync, and the run ends,
// unless the plumb.dev/sync annotation asks for a sync — with
// plumb.dev/sync-only, a selective one that the step applies itself),
// guardPrune (pruneguard.go),
// applyPlan, prune, checkHealth, runChartTests (a HelmRelease's
// spec.test, charttests.go: the chart's test hooks after a deployed
// release, TestSuccess, Ready=False reason TestFailed while a failed test
// counts), report (sync.go) and remediationOutcome (Ready=False
// RollbackSucceeded after a rollback), run by pkg/reconcile's skeleton, which
// turns the outcome into Ready, Reconciling and Stalled, logs a failure at
// error level, records its event (except where the step recorded a richer
// one: PruneFailed, PruneGuarded, HealthDegraded) and retries after
// spec.retryInterval — or, for a failure of apply, prune or health under a
// Kustomization's spec.retry, after its backoff up to its limit, with
// status.retry and Stalled=True (RetriesExceeded) at the limit (retry.go,
// through the skeleton's RetryDelay). Until render-controller has rendered the current
// generation, a reconcile writes nothing for 30 s (renderwait.go: neither
// the finalizer nor a status that only says "waiting"; the render's status
// update brings the object back, usually within a second, and a fleet
// created at once is spared a custom-resource write per object); past
// that the run is in progress (Ready=Unknown, Reconciling=True, "waiting
// for render-controller to render generation N"), not failed. When
// render-controller failed on it, the last good revision is still applied
// and report makes Ready=False with render-controller's reason at once.
//
// While a sync runs (progress.go), Ready (Unknown) and Reconciling say what
// it does now — phase and wave, objects applied, and during a health wait
// the objects not healthy yet and why — rewritten at each wave and, during
// a wait, when it changes (at most once a second); status.inventory lists
// what the sync applied so far (with the inventory before it: a superset,
// so a sync stopped half-way prunes nothing it should keep). What a run
// shows before its first step without hooks, a new generation's
// Reconciling mark included, is written only once the run has lasted a
// second (statusWriter.hold): a quick run writes only its outcome.
//
// A reconcile reads its object from the manager's cache, and from the API
// server only while a status or finalizer write of its own may not be in
// the cache yet (ownwrites.go): a sync starts from its status as stored.
//
// # A sync run
//
// A syncRun (sync.go) holds the run's inputs (the object as read, its
// sync spec and stored sync status, where and as whom it writes), the
// plan (the rendered artifact's objects, prepared and planned), the status
// it builds (out and its sync status st), and the parts that keep their
// own books, each in a file of its own: tally (tally.go: the objects the
// applies left in the cluster, their counts, writes and drift), operation
// (operation.go: the sync operation the run takes part in — made, its
// start, how it ended and that its history was recorded — and the run's
// part in spec.retry's series), statusWriter (statuswriter.go: what the
// API server has of the status, the write held back, and the writes of
// only what changed), progress (progress.go) and the fights (fight.Run).
// Where a failed sync's retries stand is worked out from the run when
// asked (retries, retry.go). syncRun's methods are the steps and what
// they share (hooks.go, plan.go, drift.go, fight.go, pruneguard.go).
//
// # The prune guard
//
// With spec.prune, a render that would prune all of the inventory (unless
// spec.allowEmpty), or more than maxPrunePercent of an inventory of at least
// --prune-guard-min-objects objects (spec.maxPrunePercent, else
// --max-prune-percent, 50), is held before anything is applied: no apply,
// no hook, no deletion; Ready=False reason PruneGuarded names how many
// objects would go, out of how many, and the rule; one PruneGuarded event
// per held render. The annotation plumb.dev/confirm-prune set to the
// render's digest lets that render through. A HelmRelease is guarded the
// same way, with the flags' thresholds (it has no allowEmpty or
// maxPrunePercent). The prune on deletion is not guarded. An object the
// render still has, a hook included, is never pruned (removedObjects).
// docs/design/prune-guard.md has the reasons.
//
// # Deletion (deletehooks.go)
//
// The finalizer sync.plumb.dev/finalizer is on a new object from its
// create: the install's MutatingAdmissionPolicy
// (deploy/sync-controller/finalizer-policy.yaml) adds it, so the first
// reconcile writes no finalizer; an object without it (the API server has
// no policy) gets it from the skeleton's Start as before, and the release
// takes it out whoever added it (reconcile.SetFinalizer).
//
// A deleted object that prunes (spec.prune, not suspended; a HelmRelease
// always, with spec.uninstall's disableHooks, deletionPropagation,
// disableWait and timeout) is held by the finalizer while
// runDeletion runs the PreDelete hooks of its last rendered artifact
// (pkg/plan's BuildDelete), prunes the inventory and, once the pruned
// objects are gone, runs the PostDelete hooks. No reconcile waits for a
// hook: each looks once and ends with deletionPending, requeued after
// DeleteHookPoll. Progress is status.sync (phase PreDelete, PostDelete or
// Failed, startedAt the deletion timestamp), so a restart resumes it.
// Sets Ready=Unknown reason Progressing while hooks run, Ready=False
// reason DeleteHookFailed (and one DeleteHookFailed event) when a hook
// failed, which holds the deletion until the annotation
// plumb.dev/force-delete: enabled skips the hooks (a DeleteHooksSkipped
// event) and the prune goes on. docs/design/sync-engine.md, "Delete
// hooks", has the reasons.
//
// # Fights (internal/fight)
//
// A foreign field manager that rewrites the fields sync-controller reverted,
// within --drift-fight-window (30 s; 0 turns this off) of the revert, is
// fighting it. The competing manager is the one whose managedFields entry
// owns the drifted fields (engine.Result.Managers). Per Kustomization,
// object and manager, further corrections are held back — 0.1 s
// (--drift-fight-backoff), then ten times longer after each repeat, up to
// the Kustomization's interval — through engine.DriftGuard: a held object is
// skipped without a request, and the reconcile is requeued for when the
// correction is due. The Syncer keeps the fight.Tracker; a run starts a
// fight.Run in applyPlan (none when drift is only reported), and
// reportFights (fight.go) writes what it reports into the status. Ordinary drift is still reverted at once, on every
// other object too. The fight ends when the manager does not write the
// fields again within the window of a correction, or when a held object no
// longer differs (an ignore rule, a Git change). Sets DriftContested=True
// (naming object, fields, manager, a HorizontalPodAutoscaler that scales the
// object — one LIST when a fight starts — and the spec.ignore rule that
// resolves it) and status.drift.contested with the revert count; emits one
// DriftContested event (error) when a fight starts and one DriftContestEnded
// (info) when it ends, and no DriftDetected, DriftCorrected or Applied event
// for a contested object's reverts. Fights are kept in memory only.
//
// # Shards
//
// With --watch-label-selector the manager's cache holds the shard's
// Kustomizations and HelmReleases only, but a reconcile may read its
// object from the API server, and the drift watchers see every owner's
// managed objects: a request may name another shard's object. Syncer.Shard holds
// the selector, and a reconcile of an object that does not match it ends
// before any step, writing nothing (docs/design/sharding.md).
//
// # Whose rights a sync uses
//
// A Kustomization (or HelmRelease) acts as its ServiceAccount: spec.serviceAccountName, or
// --default-service-account when it names none, in the Kustomization's own
// namespace. Every request the engine makes for it — reads of live objects,
// dry-runs, applies, prunes (the finalizer's prune on deletion too), health
// reads, hooks — goes through a client that impersonates
// system:serviceaccount:<namespace>:<name> (internal/target: the impersonate
// step and the deletion resolve the object's target.Target, which decides
// the ServiceAccount in one place; one client per ServiceAccount and
// cluster, kept while a Kustomization uses it). The API server decides
// what that user may do; a refusal becomes a message naming the object, the
// ServiceAccount and the verb (engine.ForbiddenError) in Ready=False, and a
// prune that is refused keeps the object in the inventory. The API server
// authorizes a ServiceAccount that does not exist like any other (by its
// name and groups), so after a refusal the ServiceAccount is read, and a
// missing one is named as such at the start of the message
// (target.Resolver.ExplainForbidden, which every step's error goes
// through). What stays
// sync-controller's own identity: reading Kustomizations (the request, and
// dependsOn), writing their status and finalizers, the watch cache behind
// drift detection (metadata-only, label-filtered, reads only), reading the
// postBuild.substituteFrom Secrets whose values drift reports redact, and
// checking, on deletion, that the ServiceAccount still exists (when it does
// not, nothing can be pruned in its name: the objects are left, with a
// PruneFailed event). Neither set means sync-controller's own identity
// throughout. docs/design/tenancy.md has the reasoning.
//
// # Remote clusters
//
// A Kustomization or a HelmRelease with spec.kubeConfig syncs into the
// cluster its Secret's kubeconfig names (internal/target): the impersonate step's Target is then
// the engine of that cluster — a client, REST mapper and watcher over the
// kubeconfig's identity, kept per (Secret, kubeconfig hash) in the same
// cache while a Kustomization uses it, and stopped when none does — and
// the ServiceAccount, if any, is impersonated there. The Kustomization, its inventory, status and events
// stay here; the remote watcher's events enqueue it in this controller.
// The kubeconfig may carry inline credentials only.
// docs/design/remote-clusters.md has the rules.
//
// With --no-cross-namespace-refs, a dependsOn or healthChecks entry in
// another namespace stalls the Kustomization (Stalled=True, Ready=False,
// InvalidSpec, "cross-namespace references are not allowed: …") until its
// spec changes. spec.sourceRef is render-controller's to check:
// sync-controller only reads status.renderedArtifact.
//
// # Events
//
// Kubernetes Events and stream events (pkg/events, JetStream subject
// plumb.events.kustomization.<namespace>.<name>): HookStarted (info) per
// hook created; Applied (info, the created, configured and unchanged counts
// in metadata) after a sync that wrote objects; Pruned (info) and
// PruneFailed (error); PruneGuarded (error) once per held render;
// HealthDegraded (error) and HealthRecovered (info) when the Healthy
// condition turns; DriftDetected and DriftCorrected with the changed paths,
// each naming the field manager that owns its live value (who changed it,
// read from the live object's managedFields before the revert:
// engine.Result.FieldManagers), and for DriftCorrected the latency from
// seeing the change to reverting it; DriftContested and DriftContestEnded (Fights, above); and, once per
// failure, the reason of a failed sync's Ready condition (ApplyFailed,
// SyncFailed, ArtifactFailed, InvalidSpec, HealthCheckExprInvalid, a render
// failure). Every reason is a constant of api/kustomize/v1 or api/meta, listed in the Reasons
// table of docs/api/kustomization.md. A HelmRelease has the same events on
// plumb.events.helmrelease.<namespace>.<name>, and InstallSucceeded or
// UpgradeSucceeded (info) after a release succeeded (api/helm/v2,
// docs/api/helmrelease.md).
//
// # Metrics
//
//	plumb_sync_reconcile_duration_seconds                   histogram over every Kustomization (pkg/metrics' set)
//	plumb_sync_step_duration_seconds{step}                  histogram per step of the reconcile, over every Kustomization
//	plumb_sync_objects_total{action}                        counter: Created, Configured, Unchanged, Deleted
//	plumb_sync_drift_detected_total{kind,namespace,name}    counter
//	plumb_sync_drift_corrected_total{kind,namespace,name}   counter
//	plumb_sync_drift_correction_seconds                     histogram: foreign write seen → reverted
//	plumb_sync_ready{namespace,name}                        gauge: 1 True, 0 False, -1 Unknown
//	plumb_sync_suspended{namespace,name}                    gauge: 1 suspended
//	plumb_sync_artifact_size_bytes{namespace,name}          gauge: the rendered artifact synced
//
// The per-object set is Kustomizations'; HelmReleases have their own,
// plumb_sync_helmrelease_reconcile_duration_seconds, _step_duration_seconds,
// _ready, _suspended and _artifact_size_bytes. sync-controller owns both kinds' Ready, so it
// exports Flux's gotk_reconcile_duration_seconds, gotk_reconcile_condition
// and gotk_suspend_status for them (kind="Kustomization", "HelmRelease";
// render-controller does not, docs/design/metrics.md).
package controller
