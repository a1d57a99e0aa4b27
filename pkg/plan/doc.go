// Package plan turns a rendered set of objects into the order sync-controller
// applies them in, the way Argo CD orders a sync. It is pure: no API calls,
// the same input always gives the same plan.
//
// # Phases
//
// A sync runs the phases PreSync, Sync and PostSync in that order, and
// SyncFail only when a task of one of them fails. Regular objects belong to
// Sync. An object with the annotation plumb.dev/hook is a hook instead: the
// annotation is a comma list of the phases it runs in (PreSync, Sync,
// PostSync, SyncFail, and the delete phases PreDelete and PostDelete, see
// Deletion), and the object is planned once per phase of the sync. Hooks are
// created anew on every sync, are not part of the inventory and are never
// pruned. plumb.dev/hook-delete-policy (a comma list of HookSucceeded,
// HookFailed, BeforeHookCreation; BeforeHookCreation when absent) says when
// sync-controller deletes a hook: after it succeeded, after it failed, or
// just before the next sync creates it again.
//
// A hook with metadata.generateName and no name gets a name for this sync:
// generateName (cut to keep the name within 63 characters) plus eight hex
// digits of a hash over Options.SyncID, the phase and the hook's identity.
// The name is unique per sync (a new SyncID gives new names) yet
// deterministic, so a controller restarted in the middle of a sync computes
// the same names and finds the hooks it already created.
//
// # Helm hooks
//
// Rendered Helm charts keep their hooks as `helm template` prints them, and
// Build maps them the way Argo CD does. An object annotated helm.sh/hook
// (and not plumb.dev/hook, which wins when both are set) is a hook: on the
// install (Options.Install: nothing applied successfully yet)
// pre-install runs in PreSync and post-install in PostSync; on every later
// sync pre-upgrade runs in PreSync and post-upgrade in PostSync. A hook
// listing both kinds runs on both. A rollback (Options.Rollback: a
// HelmRelease applying its last deployed release again) runs pre-rollback
// in PreSync and post-rollback in PostSync instead, and neither install
// nor upgrade hooks. test hooks, rollback hooks outside a rollback,
// pre/post-delete hooks (BuildDelete's PreDelete and PostDelete), and
// install-only hooks on an upgrade (or upgrade-only ones on the install),
// have no phase in the sync: they are
// left out of the plan, never applied, and (IsHook) never in the inventory
// nor pruned. helm.sh/hook-weight is the hook's wave unless
// plumb.dev/sync-wave is set; helm.sh/hook-delete-policy values
// before-hook-creation, hook-succeeded and hook-failed are
// BeforeHookCreation, HookSucceeded and HookFailed (before-hook-creation
// when none). Helm's own leniency is kept: unknown hook types and
// policies are ignored, and a weight that is not an integer is 0.
//
// ChartTests lists a chart's tests — helm.sh/hook test (or Helm 2's
// test-success), unless plumb.dev/hook or Argo CD's hook annotation moves
// the object elsewhere — in the order `helm test` runs them: by weight,
// then by name, each with its delete policies, for sync-controller to run
// after a release (phase Test, never part of a Plan).
//
// # Deletion
//
// PreDelete and PostDelete hooks run when the object that owns the set is
// deleted, never in a sync: Build leaves them out of every phase (a hook
// that also names a sync phase runs in that one), and like every hook they
// are never in the inventory. BuildDelete plans them instead, from the
// last rendered set: PreDelete waves run before anything is pruned,
// PostDelete waves once the pruned objects are gone, waves and the kind
// order as in a sync, delete policies as for any hook. Helm's pre-delete
// and post-delete hooks are PreDelete and PostDelete, with their weights
// as waves; they run on no sync, as under helm uninstall.
//
// # Waves and kinds
//
// Within a phase, objects run in waves, from the annotation plumb.dev/sync-wave
// (an integer, 0 when absent, negative allowed; anything else is an error that
// names the object). Waves run in ascending order. Within a wave objects run
// in this kind order, then by namespace and name:
//
//	Namespace, NetworkPolicy, ResourceQuota, LimitRange, ServiceAccount,
//	Secret, ConfigMap, StorageClass, PersistentVolume, PersistentVolumeClaim,
//	CustomResourceDefinition, ClusterRole, ClusterRoleBinding, Role,
//	RoleBinding, Service, DaemonSet, Pod, ReplicaSet, Deployment,
//	HorizontalPodAutoscaler, StatefulSet, Job, CronJob, IngressClass,
//	Ingress, APIService
//
// then every other kind (custom resources, and built-in kinds not listed)
// by kind, group, namespace and name. A listed kind counts only in its own
// API group (a Knative serving.knative.dev Service is a custom resource).
// The order is pkg/object's (Less), shared with pkg/render, and so is the
// identity of a task (Object.ID).
//
// # Hoisting
//
// A Namespace or CustomResourceDefinition in the set moves ahead of the
// first object that needs it, even when its own wave number is later: into
// the earliest phase and wave of any object in that namespace, or of any
// custom resource of the CRD's group and kind. Inside that wave the kind
// order puts it first. A hook that needs it pulls it into PreSync or
// PostSync (it stays in the inventory); SyncFail hooks do not pull it,
// since SyncFail is not part of the normal order. Hoisting is what lets the
// server-side dry-run of the dependents succeed.
//
// # Prune
//
// PruneOrder sorts objects to delete (those that left the set) into waves
// in the reverse order: highest wave first and, within a wave, the reverse
// kind order, so custom resources go before their CRD and everything in a
// namespace before the Namespace. sync-controller prunes after the Sync phase.
//
// # Walking a plan
//
// sync-controller runs Plan.Steps (each wave of each phase, in order), or
// Plan.WithoutHooks's steps for a resync of a sync that already succeeded.
// In a wave it applies Wave.Regular split by KindGroups (a group at a time,
// each concurrently), then starts Wave.Hooks, each task carrying its Phase
// and delete policies. SyncFail.Waves run only after a failure. IsHook says
// whether an object is a hook (Plumb's or Helm's), which the inventory
// leaves out.
package plan
