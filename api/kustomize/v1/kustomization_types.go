package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// KustomizationKind is the kind name of Kustomization.
const KustomizationKind = "Kustomization"

// Condition types specific to Kustomization.
const (
	// RenderedCondition (owned by render-controller) says whether the newest
	// source revision was rendered into status.renderedArtifact.
	RenderedCondition = "Rendered"
	// HealthyCondition (owned by sync-controller) says whether every applied
	// object is healthy at its current generation.
	HealthyCondition = "Healthy"
	// DriftedCondition (owned by sync-controller) is True while the cluster
	// differs from Git and driftPolicy is Report.
	DriftedCondition = "Drifted"
	// DriftContestedCondition (owned by sync-controller) is True while
	// another field manager keeps rewriting fields that Git sets and
	// sync-controller reverts them with a backoff (a fight); the message
	// names the objects, the fields, the competing field manager and, when
	// known, the controller behind it.
	DriftContestedCondition = "DriftContested"
)

// KubeConfigReference points at a kubeconfig of a remote cluster.
type KubeConfigReference struct {
	// SecretRef names the Secret and the key that hold the kubeconfig.
	SecretRef KubeConfigSecretRef `json:"secretRef"`
}

// KubeConfigSecretRef is a key of a Secret in the referring object's
// namespace.
type KubeConfigSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the kubeconfig in the Secret's data; unset, "value" and then
	// "value.yaml" are tried.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// Remote clusters (spec.kubeConfig, docs/design/remote-clusters.md).
const (
	// KubeConfigInvalidReason: Ready=False while the kubeconfig Secret of
	// spec.kubeConfig is missing, too large, not a kubeconfig, or asks for
	// what a kubeconfig from a Secret may not have (an exec or
	// auth-provider plugin, a file path); nothing is applied or pruned.
	KubeConfigInvalidReason = "KubeConfigInvalid"
	// RemoteClusterUnreachableReason: Ready=False while the cluster that
	// spec.kubeConfig names cannot be reached or refuses the kubeconfig's
	// credentials; nothing is applied or pruned, and it is retried.
	RemoteClusterUnreachableReason = "RemoteClusterUnreachable"
)

// Condition reasons specific to Kustomization.
const (
	BuildFailedReason      = "BuildFailed"
	SubstituteFailedReason = "SubstituteFailed"
	ValidationFailedReason = "ValidationFailed"
	// RemoteResourceRefusedReason: the source names a URL or a Git
	// repository where rendering allows only files of the source.
	RemoteResourceRefusedReason = "RemoteResourceRefused"
	// DecryptionFailedReason: Rendered=False (and an event) when a SOPS
	// file or object could not be decrypted: the decryption Secret is
	// missing or holds a bad key, or a file is encrypted for other keys.
	DecryptionFailedReason  = "DecryptionFailed"
	RenderSucceededReason   = "RenderSucceeded"
	ApplyFailedReason       = "ApplyFailed"
	PruneFailedReason       = "PruneFailed"
	HealthCheckFailedReason = "HealthCheckFailed"
	DriftDetectedReason     = "DriftDetected"
	DriftCorrectedReason    = "DriftCorrected"
	// DriftContestedReason: another field manager rewrote fields shortly
	// after sync-controller reverted them; corrections now back off.
	DriftContestedReason = "DriftContested"
	// DriftContestEndedReason: a fight is over (the competing writer
	// stopped, or an ignore rule or a Git change removed the conflict).
	DriftContestEndedReason = "DriftContestEnded"
	SyncFailedReason        = "SyncFailed"
)

// Custom health in CEL (spec.healthCheckExprs).
const (
	// HealthCheckExprInvalidReason: Ready=False and Stalled while an
	// expression of spec.healthCheckExprs does not compile; the message
	// names the entry, the expression and the error.
	HealthCheckExprInvalidReason = "HealthCheckExprInvalid"
)

// Event reasons specific to Kustomization (docs/api/kustomization.md lists
// them with the condition reasons).
const (
	// RenderedReason: render-controller stored a new rendered artifact.
	RenderedReason = "Rendered"
	// AppliedReason: sync-controller created or changed objects in a wave.
	AppliedReason = "Applied"
	// PrunedReason: sync-controller deleted objects that left the render.
	PrunedReason = "Pruned"
	// HookStartedReason: sync-controller created a hook of a phase.
	HookStartedReason = "HookStarted"
	// HealthDegradedReason: a checked object became unhealthy.
	HealthDegradedReason = "HealthDegraded"
	// HealthRecoveredReason: every checked object is healthy again.
	HealthRecoveredReason = "HealthRecovered"
)

// The prune guard (docs/design/prune-guard.md): a sync that would prune all
// of the inventory, or more of it than maxPrunePercent allows, is held.
const (
	// PruneGuardedReason: Ready=False while the prune guard holds a sync.
	PruneGuardedReason = "PruneGuarded"
	// ConfirmPruneAnnotation, on a Kustomization, confirms the prune of one
	// render the prune guard holds: its value is the digest of that rendered
	// artifact (status.renderedArtifact.digest, "sha256:…"). Another render
	// is guarded again.
	ConfirmPruneAnnotation = "plumb.dev/confirm-prune"
	// ConfirmValue, as plumb.dev/prune's value on an object (or Argo CD's
	// sync options Prune=confirm and Delete=confirm), asks that the
	// object be deleted only once a person confirms: a sync that would
	// prune it is held by the prune guard until the render is confirmed
	// (ConfirmPruneAnnotation), and the deletion of its Kustomization waits
	// for ConfirmDeleteAnnotation.
	ConfirmValue = "confirm"
)

// Confirmed deletions (docs/design/prune-guard.md, "Objects that ask for a
// confirmation"): the deletion of a Kustomization or HelmRelease whose
// objects ask for a confirmation (plumb.dev/prune: confirm, Argo CD's
// Delete=confirm) waits, deleting nothing, until it is confirmed.
const (
	// DeletionConfirmationRequiredReason: Ready=False (and an event) while
	// the deletion of a Kustomization or HelmRelease waits for
	// ConfirmDeleteAnnotation.
	DeletionConfirmationRequiredReason = "DeletionConfirmationRequired"
	// ConfirmDeleteAnnotation, on a Kustomization or HelmRelease being
	// deleted, confirms the deletion of its objects that ask for one: its
	// value is a time (RFC 3339) not before the object's
	// deletionTimestamp, so a value that was already there, from Git
	// say, confirms nothing.
	ConfirmDeleteAnnotation = "plumb.dev/confirm-delete"
)

// Shared objects: with spec.failOnSharedResource a Kustomization refuses to
// write an object another Kustomization or HelmRelease manages.
const (
	// SharedResourceReason: Ready=False when a sync was refused, before
	// anything was applied, because objects of its render are managed by
	// another Kustomization or HelmRelease.
	SharedResourceReason = "SharedResource"
)

// Rollback (docs/design/sync-engine.md, "Rollback"): a Kustomization or a
// HelmRelease annotated with the digest of an earlier render of its
// status.history syncs that render again and holds it: new renders are
// made but not applied until the annotation goes (plumb resume).
const (
	// RollbackAnnotation holds the render a Kustomization or HelmRelease
	// is rolled back to: the digest ("sha256:…") of an entry of its
	// status.history, whose file render-controller keeps.
	RollbackAnnotation = "plumb.dev/rollback"
	// RollbackFollowGitAnnotation ends the hold on the next new render: its
	// value is the digest of the render that was current when the rollback
	// was asked (status.renderedArtifact.digest); a render of another
	// digest is synced, and sync-controller removes both annotations.
	RollbackFollowGitAnnotation = "plumb.dev/rollback-follow-git"
	// RolledBackCondition is True while a rollback holds an earlier render;
	// absent otherwise.
	RolledBackCondition = "RolledBack"
	// RolledBackReason: RolledBack=True (and an event when the rollback is
	// applied) while the render of plumb.dev/rollback is held; the message
	// names its revision and the newest one, not applied.
	RolledBackReason = "RolledBack"
	// RollbackUnavailableReason: Ready=False (and an event) when
	// plumb.dev/rollback names a digest that status.history no longer
	// has; nothing is applied until the annotation changes.
	RollbackUnavailableReason = "RollbackUnavailable"
	// RollbackEndedReason: an event when a rollback's hold ends (the
	// annotation removed, or a new render with follow-git) and the newest
	// render is synced again.
	RollbackEndedReason = "RollbackEnded"
)

// Deletion (docs/design/sync-engine.md, "Delete hooks"): sync-controller's
// finalizer holds a deleted Kustomization (or HelmRelease) while its
// PreDelete hooks run, its inventory is pruned and its PostDelete hooks run.
const (
	// SyncFinalizer is sync-controller's finalizer. render-controller keeps
	// the rendered artifact while it is present: the delete hooks come
	// from it.
	SyncFinalizer = "sync.plumb.dev/finalizer"
	// DeleteHookFailedReason: Ready=False (and an event) when a PreDelete
	// or PostDelete hook failed; the deletion waits until it is forced.
	DeleteHookFailedReason = "DeleteHookFailed"
	// DeleteHooksSkippedReason: an event when the force annotation ended a
	// deletion whose delete hooks had started.
	DeleteHooksSkippedReason = "DeleteHooksSkipped"
	// TerminationTimeoutReason: an event (error) when deletionPolicy
	// WaitForTermination stopped waiting, after spec.timeout, for deleted
	// objects still there; the finalizer is then released, as Flux does.
	TerminationTimeoutReason = "TerminationTimeout"
	// ForceDeleteAnnotation set to EnabledValue on an object being deleted
	// skips its delete hooks, those running and those not yet started: the
	// inventory is pruned as spec.prune says and the finalizer released.
	ForceDeleteAnnotation = "plumb.dev/force-delete"
	// PhasePreDelete and PhasePostDelete are status.sync.phase while a
	// deletion runs its hooks (PostDelete also while the pruned objects
	// are still going); a failed one is PhaseFailed.
	PhasePreDelete  = "PreDelete"
	PhasePostDelete = "PostDelete"
)

// Labels and annotations sync-controller reads or writes on managed objects.
const (
	NameLabel      = "kustomize.plumb.dev/name"
	NamespaceLabel = "kustomize.plumb.dev/namespace"

	PruneAnnotation            = "plumb.dev/prune"
	ForceAnnotation            = "plumb.dev/force"
	SyncWaveAnnotation         = "plumb.dev/sync-wave"
	HookAnnotation             = "plumb.dev/hook"
	HookDeletePolicyAnnotation = "plumb.dev/hook-delete-policy"
	DisabledValue              = "disabled"
	EnabledValue               = "enabled"

	// SSAAnnotation set to IfNotPresentValue makes sync-controller create
	// the object when it does not exist and never change an existing one:
	// no update, no drift correction or report (Flux's
	// kustomize.toolkit.fluxcd.io/ssa: IfNotPresent). render-controller
	// sets it on the CRDs of a chart's crds/ folder under the CRD policy
	// Create.
	SSAAnnotation     = "plumb.dev/ssa"
	IfNotPresentValue = "IfNotPresent"
)

// DeletionPolicy is spec.deletionPolicy: what the deletion of a
// Kustomization does to the objects it manages.
type DeletionPolicy string

// The deletion policies, Flux's.
const (
	// DeletionPolicyMirrorPrune deletes when spec.prune is true, orphans
	// when it is false.
	DeletionPolicyMirrorPrune DeletionPolicy = "MirrorPrune"
	// DeletionPolicyDelete deletes, even with spec.prune false.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyWaitForTermination deletes and holds the finalizer
	// until the deleted objects are gone, at most spec.timeout.
	DeletionPolicyWaitForTermination DeletionPolicy = "WaitForTermination"
	// DeletionPolicyOrphan leaves the objects, even with spec.prune true.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// PrunePropagationPolicy is spec.prunePropagationPolicy.
type PrunePropagationPolicy string

// The values of spec.prunePropagationPolicy, Argo CD's spelling.
const (
	PrunePropagationBackground PrunePropagationPolicy = "background"
	PrunePropagationForeground PrunePropagationPolicy = "foreground"
	PrunePropagationOrphan     PrunePropagationPolicy = "orphan"
)

// GetDeletionPolicy returns spec.deletionPolicy, MirrorPrune when unset.
func (in *Kustomization) GetDeletionPolicy() DeletionPolicy {
	if in.Spec.DeletionPolicy == "" {
		return DeletionPolicyMirrorPrune
	}
	return in.Spec.DeletionPolicy
}

// DeletesOnDeletion says whether the deletion of the Kustomization
// deletes the objects it manages (and so runs its delete hooks).
func (in *Kustomization) DeletesOnDeletion() bool {
	switch in.GetDeletionPolicy() {
	case DeletionPolicyDelete, DeletionPolicyWaitForTermination:
		return true
	case DeletionPolicyOrphan:
		return false
	default:
		return in.Spec.Prune
	}
}

// BuildMetadataOption is an entry of spec.buildMetadata.
// +kubebuilder:validation:Enum=originAnnotations;transformerAnnotations
type BuildMetadataOption string

// The options of kustomize's buildMetadata that spec.buildMetadata takes.
const (
	// BuildMetadataOriginAnnotations annotates each object with the file it
	// was read from (config.kubernetes.io/origin).
	BuildMetadataOriginAnnotations BuildMetadataOption = "originAnnotations"
	// BuildMetadataTransformerAnnotations annotates each object with the
	// transformers that changed it (alpha.config.kubernetes.io/transformations).
	BuildMetadataTransformerAnnotations BuildMetadataOption = "transformerAnnotations"
)

// DriftPolicy says what sync-controller does when the cluster drifts from Git.
// +kubebuilder:validation:Enum=Correct;Report
type DriftPolicy string

const (
	// DriftPolicyCorrect reverts foreign changes as soon as they are seen.
	DriftPolicyCorrect DriftPolicy = "Correct"
	// DriftPolicyReport only reports foreign changes.
	DriftPolicyReport DriftPolicy = "Report"
)

// KustomizationSpec says what to render from which source and how to apply it.
// +kubebuilder:validation:XValidation:rule="!has(self.retryInterval) || duration(self.retryInterval) > duration('0s')",message="spec.retryInterval must be greater than zero"
type KustomizationSpec struct {
	// SourceRef names the source whose artifact holds the manifests.
	// +required
	SourceRef CrossNamespaceSourceReference `json:"sourceRef"`

	// Path to the directory with the kustomization.yaml or plain manifests,
	// relative to the source root; defaults to the root.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="spec.path must not contain '..'"
	Path string `json:"path,omitempty"`

	// Interval between two reconciles.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// RetryInterval between two attempts after a failure; defaults to Interval.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// Retry retries a failed sync with an exponential backoff, as Argo CD's
	// spec.syncPolicy.retry: after a failure of the sync (apply, hooks,
	// prune, health check), sync-controller tries again after
	// backoff.duration·backoff.factor^(n-1) for retry n, at most
	// backoff.maxDuration, up to limit retries; status.retry shows the
	// attempt and when the next is due. Once the limit is reached no retry
	// is made until a new revision, a spec change or a reconcile request.
	// Unset, a failed sync is tried again every retryInterval. Failures
	// before the sync (downloading the rendered artifact, a dependency not
	// ready) are not counted: they keep retryInterval either way.
	// +optional
	Retry *RetryStrategy `json:"retry,omitempty"`

	// Timeout bounds a build, apply and health wait; defaults to Interval.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Prune deletes objects that left the rendered set.
	// +required
	Prune bool `json:"prune"`

	// DeletionPolicy says what becomes of the managed objects when the
	// Kustomization is deleted (Flux's field): MirrorPrune (the default)
	// deletes them when prune is true and leaves them when it is false;
	// Delete deletes them whatever prune says; WaitForTermination deletes
	// them and holds the Kustomization until they are gone, at most
	// spec.timeout from its deletion; Orphan leaves them whatever prune
	// says. Delete hooks run only when the objects are deleted.
	// +optional
	// +kubebuilder:validation:Enum=MirrorPrune;Delete;WaitForTermination;Orphan
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// AllowEmpty lets a sync prune every object of the inventory: a render
	// that keeps none of them (an empty commit, a path moved away). Unset, such
	// a sync is held by the prune guard — nothing applied, nothing deleted,
	// Ready=False reason PruneGuarded — until this field is set or the render
	// is confirmed with the plumb.dev/confirm-prune annotation. Read only when
	// prune is true; the deletion of the Kustomization itself is not guarded.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// MaxPrunePercent is the largest share of the inventory, in percent, that
	// one sync may prune without confirmation, when the inventory holds at
	// least sync-controller's --prune-guard-min-objects objects (4 by
	// default). A sync that would prune more is held like an empty one (see
	// allowEmpty); pruning all of the inventory is governed by allowEmpty
	// alone. 100 turns this share guard off; 0 holds every prune of such an
	// inventory. Unset: sync-controller's --max-prune-percent (50 by default).
	// Read only when prune is true.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxPrunePercent *int32 `json:"maxPrunePercent,omitempty"`

	// PrunePropagationPolicy is how the dependents of an object this
	// Kustomization deletes go, in a sync's prune and in the deletion of
	// the Kustomization (Argo CD's sync option PrunePropagationPolicy):
	// background (the default: the object goes at once, its dependents
	// after it), foreground (its dependents first; the object stays,
	// with a deletionTimestamp, until they are gone) or orphan (its
	// dependents are left, without their owner reference).
	// +optional
	// +kubebuilder:validation:Enum=background;foreground;orphan
	PrunePropagationPolicy PrunePropagationPolicy `json:"prunePropagationPolicy,omitempty"`

	// FailOnSharedResource refuses a sync whose render has an object that
	// another Kustomization or HelmRelease manages (its ownership labels
	// name another owner; Argo CD's sync option FailOnSharedResource):
	// nothing is applied and Ready=False, reason SharedResource, names the
	// objects and their owners. Unset, such an object is taken over, as a
	// server-side apply takes over fields, and the last writer manages it.
	// +optional
	FailOnSharedResource bool `json:"failOnSharedResource,omitempty"`

	// Wait for every applied object to become healthy before Ready=True.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// Force recreates objects whose immutable fields changed.
	// +optional
	// +kubebuilder:default=false
	Force bool `json:"force,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ServiceAccountName is the ServiceAccount, in the Kustomization's
	// namespace, that sync-controller impersonates for everything it does to
	// the cluster for this Kustomization: dry-run and apply, prune, health
	// reads and hooks, and the prune on deletion. Unset, sync-controller's
	// --default-service-account applies when it is set, and otherwise its
	// own identity. An object the ServiceAccount may not write makes the
	// Kustomization Ready=False with the object and the refused verb.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// KubeConfig names a Secret, in the Kustomization's namespace, holding
	// a kubeconfig of another cluster: sync-controller applies, prunes,
	// watches for drift and checks health there instead of in its own
	// cluster (docs/design/remote-clusters.md). The inventory, status and
	// events stay here. With serviceAccountName (or
	// --default-service-account) the ServiceAccount of that name, in the
	// Kustomization's namespace of the remote cluster, is impersonated
	// there. The kubeconfig may carry only inline credentials: exec and
	// auth-provider plugins, and any file path, are refused.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// DependsOn lists Kustomizations that must be ready first: Ready at
	// their latest generation, or as an entry's readyExpr says.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// TargetNamespace sets or overrides the namespace of every object.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// NamePrefix is prepended to the name of every object.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	NamePrefix string `json:"namePrefix,omitempty"`

	// NameSuffix is appended to the name of every object.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	NameSuffix string `json:"nameSuffix,omitempty"`

	// Patches are strategic-merge or JSON 6902 patches, each with an optional
	// target selector.
	// +optional
	Patches []Patch `json:"patches,omitempty"`

	// Images override container image names, tags or digests.
	// +optional
	Images []Image `json:"images,omitempty"`

	// Components are paths to kustomize components, relative to Path.
	// +optional
	Components []string `json:"components,omitempty"`

	// IgnoreMissingComponents drops the components that are not in the
	// source before the build instead of failing it (Flux's field): one
	// set of Kustomizations can then name components that only some
	// sources or revisions have.
	// +optional
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`

	// BuildMetadata asks kustomize to annotate the built objects with
	// where they come from (Flux's field, kustomize's buildMetadata):
	// originAnnotations adds config.kubernetes.io/origin (the file each
	// object was read from), transformerAnnotations
	// alpha.config.kubernetes.io/transformations (the transformers that
	// changed it).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	BuildMetadata []BuildMetadataOption `json:"buildMetadata,omitempty"`

	// CommonMetadata adds labels and annotations to every object.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// Jsonnet passes external variables, top-level arguments and library
	// folders to the evaluation of the .jsonnet files in path (Argo CD's
	// directory.jsonnet). Those files are evaluated whether or not this
	// field is set, when path holds no kustomization file; set with a
	// path that has one, or with a path without .jsonnet files, the render
	// fails. See docs/design/render-sandbox.md, "Jsonnet".
	// +optional
	Jsonnet *Jsonnet `json:"jsonnet,omitempty"`

	// PostBuild substitutes variables in the rendered manifests.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`

	// Decryption decrypts SOPS-encrypted Secrets and generator files while
	// rendering (Flux's field). See docs/design/sops.md.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// Plugin renders spec.path with a config-management plugin instead of
	// kustomize (Argo CD's plugin source; docs/design/plugins.md).
	// +optional
	Plugin *Plugin `json:"plugin,omitempty"`

	// HealthChecks lists further objects that must be healthy before the
	// Kustomization is Ready, besides the ones it applies.
	// +optional
	HealthChecks []NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// HealthCheckExprs judge the health of the objects of a kind by CEL
	// expressions over the object instead of the built-in rules (Flux's
	// field of the same name and meaning): for waits (wait, healthChecks,
	// sync waves) and for `plumb tree`. One entry per apiVersion and kind.
	// See docs/design/health-expressions.md.
	// +optional
	// +listType=map
	// +listMapKey=apiVersion
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=50
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// DriftPolicy says what to do when the cluster drifts from Git: Correct
	// reverts the foreign change as soon as it is seen, Report only reports it.
	// +optional
	// +kubebuilder:default=Correct
	DriftPolicy DriftPolicy `json:"driftPolicy,omitempty"`

	// SyncPolicy is Automatic (every new revision is applied) or Manual
	// (each revision is compared with the cluster by a dry-run, reported
	// in status.outOfSync, and applied only when the plumb.dev/sync
	// annotation asks; drift is reported, not corrected).
	// +optional
	SyncPolicy SyncPolicy `json:"syncPolicy,omitempty"`

	// Ignore rules remove fields from drift detection and correction.
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`

	// SyncWindows are when new revisions may be applied, as Argo CD's sync
	// windows: outside them a new revision is rendered and held until they
	// open (docs/api/kustomization.md, "Sync windows"). SyncWindowPolicies
	// of the namespace that select the Kustomization add theirs.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	SyncWindows []SyncWindow `json:"syncWindows,omitempty"`
}

// CustomHealthCheck is the health of the objects of one kind in CEL: each
// expression reads the object's top-level fields (apiVersion, kind,
// metadata, spec, status, …) as variables and must return a bool. They are
// tried in the order inProgress, failed, current; the first that holds
// decides (Progressing, Degraded, Healthy), and none holding is
// Progressing. An object whose status.observedGeneration is not its
// metadata.generation is Progressing before any expression is tried.
type CustomHealthCheck struct {
	// APIVersion of the objects judged, e.g. cert-manager.io/v1. Only its
	// group is compared: every version of the kind is judged alike.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z0-9]+$`
	APIVersion string `json:"apiVersion"`

	// Kind of the objects judged, e.g. Certificate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// Current holds when the object has reached the state its spec asks
	// for: Healthy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Current string `json:"current"`

	// InProgress holds while the object is still on its way: Progressing.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	InProgress string `json:"inProgress,omitempty"`

	// Failed holds when the object failed to reach its state: Degraded,
	// which ends a wait at once.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Failed string `json:"failed,omitempty"`
}

// Defaults of spec.retry.backoff, Argo CD's.
const (
	DefaultRetryDuration    = 5 * time.Second
	DefaultRetryFactor      = 2
	DefaultRetryMaxDuration = 3 * time.Minute
)

// RetryStrategy is spec.retry: how often and how fast a failed sync is
// retried (Argo CD's RetryStrategy).
type RetryStrategy struct {
	// Limit is how many times a failed sync is retried: 0 (the default, as
	// in Argo CD) never, -1 without end.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= -1 && self <= 10000",message="spec.retry.limit must be -1 (retry without end), 0 (no retry) or a count of at most 10000"
	Limit int64 `json:"limit,omitempty"`

	// Backoff says how long to wait before each retry.
	// +optional
	Backoff *RetryBackoff `json:"backoff,omitempty"`
}

// RetryBackoff is spec.retry.backoff: the delay before retry n is
// duration·factor^(n-1), at most maxDuration.
// +kubebuilder:validation:XValidation:rule="(has(self.maxDuration) ? duration(self.maxDuration) : duration('3m')) >= (has(self.duration) ? duration(self.duration) : duration('5s'))",message="spec.retry.backoff.maxDuration must not be shorter than spec.retry.backoff.duration (defaults 3m and 5s)"
type RetryBackoff struct {
	// Duration before the first retry; 5s when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.retry.backoff.duration must be greater than zero"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// Factor multiplies the delay after each retry; 2 when unset, 1 for a
	// constant delay. An integer, as in Argo CD.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 1000",message="spec.retry.backoff.factor must be an integer from 1 to 1000"
	Factor *int64 `json:"factor,omitempty"`

	// MaxDuration caps the delay before a retry; 3m when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.retry.backoff.maxDuration must be greater than zero"
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
}

// GetBackoff returns spec.retry.backoff, defaults filled in.
func (in *RetryStrategy) GetBackoff() (first time.Duration, factor int64, max time.Duration) {
	first, factor, max = DefaultRetryDuration, DefaultRetryFactor, DefaultRetryMaxDuration
	if b := in.Backoff; b != nil {
		if b.Duration != nil {
			first = b.Duration.Duration
		}
		if b.Factor != nil {
			factor = *b.Factor
		}
		if b.MaxDuration != nil {
			max = b.MaxDuration.Duration
		}
	}
	return first, factor, max
}

// Allows reports whether a sync that failed after made retries is retried
// once more.
func (in *RetryStrategy) Allows(made int64) bool {
	return in.Limit < 0 || made < in.Limit
}

// RetryStatus is status.retry: where a series of retries of a failed sync
// stands (spec.retry). It is removed when a sync succeeds, and starts over
// with a new revision, a spec change or a reconcile request.
type RetryStatus struct {
	// Attempt is the number of the retry due at nextAttemptAt, 1 for the
	// first; once the limit is reached, the number of retries made (Argo
	// CD's operationState.retryCount).
	Attempt int64 `json:"attempt"`

	// NextAttemptAt is when the next retry is due; unset once the limit is
	// reached.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`
}

// CrossNamespaceSourceReference names the source of a Kustomization.
type CrossNamespaceSourceReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository;Bucket;ExternalArtifact
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the referent; defaults to the Kustomization's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// NamespacedObjectKindReference names an object of any kind.
type NamespacedObjectKindReference struct {
	// APIVersion of the referent, e.g. apps/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	Name string `json:"name"`

	// Namespace of the referent.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Selector picks the objects a patch or ignore rule applies to. Empty fields
// match everything.
type Selector struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name is a regular expression matched against the whole name.
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// AnnotationSelector is a label-selector expression over annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// LabelSelector is a label-selector expression.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// Patch is a strategic-merge or JSON 6902 patch.
type Patch struct {
	// Patch is the patch document, YAML or JSON.
	// +required
	// +kubebuilder:validation:MinLength=1
	Patch string `json:"patch"`

	// Target selects the objects to patch; a strategic-merge patch without
	// a target applies to the object it names.
	// +optional
	Target *Selector `json:"target,omitempty"`
}

// Image overrides a container image.
type Image struct {
	// Name of the image to match, without tag or digest.
	// +required
	Name string `json:"name"`
	// NewName replaces the image name.
	// +optional
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// CommonMetadata is added to every rendered object.
type CommonMetadata struct {
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// Jsonnet is what the evaluation of a path's .jsonnet files takes, field
// for field Argo CD's directory.jsonnet.
type Jsonnet struct {
	// ExtVars are the external variables, read with std.extVar(name).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	ExtVars []JsonnetVar `json:"extVars,omitempty"`

	// TLAs are the top-level arguments: a file that evaluates to a
	// function is called with them as named arguments.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	TLAs []JsonnetVar `json:"tlas,omitempty"`

	// Libs are folders, relative to the source root, searched in order for
	// an import not found beside the importing file (the jsonnet CLI's
	// -J).
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(l, !l.startsWith('/') && !l.contains('..'))",message="spec.jsonnet.libs must be folders inside the source: no leading '/' and no '..'"
	Libs []string `json:"libs,omitempty"`
}

// JsonnetVar is an external variable or a top-level argument.
type JsonnetVar struct {
	// Name of the variable or argument.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Value is a string, or Jsonnet code when code is true.
	// +required
	// +kubebuilder:validation:MaxLength=65536
	Value string `json:"value"`

	// Code evaluates value as Jsonnet (std.extVar then returns what it
	// evaluates to) instead of passing it as a string.
	// +optional
	Code bool `json:"code,omitempty"`
}

// PostBuild holds the variable substitution done after kustomize build.
type PostBuild struct {
	// Substitute maps variable names to values; ${name} in the rendered
	// manifests is replaced by the value.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// SubstituteFrom reads variables from ConfigMaps and Secrets in the
	// Kustomization's namespace; Substitute wins on a conflict.
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// DecryptionProviderSOPS is the one decryption provider: Mozilla SOPS.
const DecryptionProviderSOPS = "sops"

// Decryption says how render-controller decrypts the encrypted files of the
// source (Flux's spec.decryption): the provider, and the Secret with the
// private keys.
type Decryption struct {
	// Provider is the format of the encrypted files; sops is the only one.
	// +required
	// +kubebuilder:validation:Enum=sops
	Provider string `json:"provider"`

	// SecretRef names a Secret in the Kustomization's namespace whose keys
	// ending in .agekey hold age identities and in .asc armored OpenPGP
	// private keys. Without it nothing can be decrypted.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret with variables.
type SubstituteReference struct {
	// +required
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`

	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Optional lets the build go on when the object does not exist.
	// +optional
	// +kubebuilder:default=false
	Optional bool `json:"optional,omitempty"`
}

// IgnoreRule removes fields from drift detection for the objects it targets.
// It names fields in up to three ways, as Argo CD's ignoreDifferences does;
// at least one is required.
// +kubebuilder:validation:XValidation:rule="has(self.paths) || has(self.jqPathExpressions) || has(self.managedFieldsManagers)",message="an ignore rule needs paths, jqPathExpressions or managedFieldsManagers"
type IgnoreRule struct {
	// Paths are JSON pointers (RFC 6901), e.g. /spec/replicas.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Paths []string `json:"paths,omitempty"`

	// JQPathExpressions are jq path expressions, evaluated on each object
	// (the one from Git and the one in the cluster, each on its own); every
	// field one of them yields is ignored, e.g.
	// .spec.template.spec.containers[] | select(.name == "istio-proxy").
	// Argo CD's ignoreDifferences.jqPathExpressions.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`

	// ManagedFieldsManagers ignores the fields that these field managers
	// own in the cluster's object (metadata.managedFields), e.g.
	// kube-controller-manager or an autoscaler's manager name, so their
	// writes are neither drift nor reverted. Argo CD's
	// ignoreDifferences.managedFieldsManagers.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=128
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`

	// Target selects the objects; empty selects all.
	// +optional
	Target *Selector `json:"target,omitempty"`
}

// MaxHistory is how many entries status.history keeps, newest first, as
// Flux does.
const MaxHistory = 5

// KustomizationStatus is what render-controller and sync-controller observed.
type KustomizationStatus struct {
	// ObservedGeneration is the generation sync-controller last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Healthy, Drifted, DriftContested, OutOfSync (sync-controller)
	// and Rendered (render-controller).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RenderedArtifact is the rendered manifests artifact (render-controller).
	// +optional
	RenderedArtifact *meta.Artifact `json:"renderedArtifact,omitempty"`

	// LastAppliedRevision is the source revision last applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAttemptedRevision is the source revision last tried.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// History holds the last sync operations, newest first, one entry
	// per rendered artifact digest, at most MaxHistory (sync-controller).
	// +optional
	History meta.History `json:"history,omitempty"`

	// Inventory lists every object the last sync applied, in Flux's shape
	// (see InventoryEntry).
	// +optional
	Inventory *Inventory `json:"inventory,omitempty"`

	// Drift summarizes drift seen between Git and the cluster.
	// +optional
	Drift *DriftStatus `json:"drift,omitempty"`

	// Sync shows the phase and wave of a sync in progress.
	// +optional
	Sync *SyncProgress `json:"sync,omitempty"`

	// Retry is where the retries of a failed sync stand, with spec.retry.
	// +optional
	Retry *RetryStatus `json:"retry,omitempty"`

	ManualSyncStatus `json:",inline"`
	// SyncWindow says, while the Kustomization is outside its sync windows,
	// which windows keep syncs out, the revision held and when they open.
	// +optional
	SyncWindow *SyncWindowStatus `json:"syncWindow,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// DriftStatus summarizes drift between Git and the cluster.
type DriftStatus struct {
	// Count of objects that differed from Git at the last check.
	Count int `json:"count"`
	// LastDetected is when drift was last seen.
	// +optional
	LastDetected *metav1.Time `json:"lastDetected,omitempty"`
	// Paths lists up to 20 drifted fields as <kind>/<namespace>/<name>:<json path>.
	// +optional
	Paths []string `json:"paths,omitempty"`
	// Contested lists the objects whose drifted fields another field
	// manager keeps rewriting after sync-controller reverts them (a fight):
	// their correction backs off exponentially while the fight lasts.
	// +optional
	// +listType=atomic
	Contested []ContestedDrift `json:"contested,omitempty"`
}

// ContestedDrift is one object that sync-controller and another field
// manager keep changing back and forth.
type ContestedDrift struct {
	// Object is <kind>/<namespace>/<name>, or <kind>/<name> when cluster-scoped.
	Object string `json:"object"`
	// Fields are the contested fields, as paths like spec.replicas.
	// +listType=atomic
	Fields []string `json:"fields"`
	// Manager is the competing field manager, as the object's
	// managedFields name it.
	Manager string `json:"manager"`
	// Controller names a known controller that writes the fields, e.g.
	// HorizontalPodAutoscaler/<namespace>/<name>, when one was found.
	// +optional
	Controller string `json:"controller,omitempty"`
	// Reverts counts the corrections since the fight began, the first
	// one included.
	Reverts int `json:"reverts"`
	// Since is when the fight was detected.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// NextRevert is when the next correction is due, while one is held back.
	// +optional
	NextRevert *metav1.Time `json:"nextRevert,omitempty"`
}

// Sync phases, in the order a sync runs them; Succeeded and Failed mark a
// finished sync.
const (
	PhasePreSync   = "PreSync"
	PhaseSync      = "Sync"
	PhasePostSync  = "PostSync"
	PhaseSyncFail  = "SyncFail"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// SyncProgress is the newest sync operation: which rendered artifact it
// applies and how far it got. A sync runs the hooks and waves of one
// rendered artifact; it is kept here, in the cluster, so a restarted
// sync-controller resumes it instead of starting over.
type SyncProgress struct {
	// Revision is the source revision being synced.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Digest is the digest of the rendered artifact being synced.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Generation is the Kustomization generation being synced.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Phase is PreSync, Sync, PostSync or SyncFail while running, then
	// Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Wave is the sync wave being applied or waited on.
	// +optional
	Wave int `json:"wave"`
	// StartedAt is when the sync began.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when the sync succeeded or failed; a failed sync is
	// tried again retryInterval after it.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Message says what the sync waits for or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Warnings name what the sync follows differently from what an
	// object's annotations ask: a plumb.dev/* annotation and an
	// argocd.argoproj.io/* one that disagree (Plumb's is followed), an
	// Argo CD sync option a server-side apply cannot honour.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Warnings []string `json:"warnings,omitempty"`
}

// Kustomization renders manifests from a source and keeps the cluster equal to them.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ks
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KustomizationSpec   `json:"spec,omitempty"`
	Status KustomizationStatus `json:"status,omitempty"`
}

// KustomizationList is a list of Kustomization.
// +kubebuilder:object:root=true
type KustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Kustomization `json:"items"`
}

// GetConditions returns the status conditions.
func (in *Kustomization) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Kustomization) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns the bound for one reconcile.
func (in *Kustomization) GetTimeout() metav1.Duration {
	if in.Spec.Timeout != nil {
		return *in.Spec.Timeout
	}
	return in.Spec.Interval
}

// GetDriftPolicy returns the drift policy, Correct when unset.
func (in *Kustomization) GetDriftPolicy() DriftPolicy {
	if in.Spec.DriftPolicy == "" {
		return DriftPolicyCorrect
	}
	return in.Spec.DriftPolicy
}

// GetObservedGeneration returns status.observedGeneration.
func (in *Kustomization) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Kustomization) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *Kustomization) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Kustomization) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
