package v2

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// HelmReleaseKind is the kind name of HelmRelease.
const HelmReleaseKind = "HelmRelease"

// Condition types specific to HelmRelease. Rendered, Healthy, Drifted and
// DriftContested are shared with Kustomization (api/kustomize/v1) and mean
// the same.
const (
	// ReleasedCondition (owned by sync-controller) says whether the newest
	// render was installed or upgraded: every object applied and every hook
	// succeeded.
	ReleasedCondition = "Released"
)

// Reasons of the Released condition (sync-controller).
const (
	// InstallSucceededReason: the first sync applied every object and every
	// hook succeeded.
	InstallSucceededReason = "InstallSucceeded"
	// InstallFailedReason: the first sync failed.
	InstallFailedReason = "InstallFailed"
	// UpgradeSucceededReason: a later sync of a new render succeeded.
	UpgradeSucceededReason = "UpgradeSucceeded"
	// UpgradeFailedReason: a later sync of a new render failed.
	UpgradeFailedReason = "UpgradeFailed"
)

// Labels sync-controller sets on the objects of a HelmRelease, the
// counterparts of kustomize.plumb.dev/name and /namespace.
const (
	NameLabel      = "helm.plumb.dev/name"
	NamespaceLabel = "helm.plumb.dev/namespace"
)

// Helm's annotations on rendered objects, which sync-controller reads
// (pkg/plan maps the hook annotations onto Plumb's phases, waves and
// delete policies; an explicit plumb.dev/hook wins).
const (
	// HookAnnotation lists the Helm hooks an object is: pre-install,
	// post-install, pre-upgrade, post-upgrade, pre-delete, post-delete,
	// pre-rollback, post-rollback, test.
	HookAnnotation = "helm.sh/hook"
	// HookWeightAnnotation orders hooks of one phase: Plumb's wave.
	HookWeightAnnotation = "helm.sh/hook-weight"
	// HookDeletePolicyAnnotation lists before-hook-creation, hook-succeeded
	// and hook-failed.
	HookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
	// ResourcePolicyAnnotation set to KeepPolicy keeps an object when it
	// leaves the chart or the release is uninstalled: it is never pruned.
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	KeepPolicy               = "keep"
)

// Keys of the rendered artifact's metadata (status.renderedArtifact.metadata),
// written by render-controller and read by sync-controller for the history.
const (
	ArtifactChartNameKey    = "chart-name"
	ArtifactChartVersionKey = "chart-version"
	ArtifactConfigDigestKey = "config-digest"
	// ArtifactInputsDigestKey holds "sha256:<hex>" of what the render was
	// made from: the chart artifact's digest (and its revision, for an
	// OCIRepository's or ExternalArtifact's), the config digest, the
	// release name and namespace, install.crds, upgrade.crds, the
	// post-renderers and commonMetadata — not the cluster's capabilities,
	// nor whether it was an install or an upgrade. render-controller
	// renders again only when it changes (or the stored render is gone),
	// so the move from install to upgrade alone never makes a new render,
	// a controller restart neither.
	ArtifactInputsDigestKey = "inputs-digest"
	// ArtifactOCIDigestKey holds the digest ("sha256:<hex>") of the chart
	// artifact when it came from an OCIRepository, or an ExternalArtifact
	// whose revision holds one: the digest whose first 12 hex digits the
	// revision carries as build metadata. Absent for a HelmChart's chart.
	// sync-controller copies it into lastAttemptedRevisionDigest and the
	// release's history entry (ociDigest).
	ArtifactOCIDigestKey = "oci-digest"
	// ArtifactReleaseActionKey holds what the render was made for (the
	// values of status.lastAttemptedReleaseAction): ReleaseActionInstall (.Release.IsInstall, install.crds) or
	// ReleaseActionUpgrade. An install's render that meets a release
	// deployed by another hand — one sync-controller adopted from Helm's
	// storage into status.history — is rendered again as the upgrade Helm
	// would make (render-controller), and sync-controller applies only
	// that one.
	ArtifactReleaseActionKey = "release-action"
)

// CRD policies of install.crds and upgrade.crds.
const (
	// CRDsSkip leaves the chart's crds/ folder out of the render.
	CRDsSkip = "Skip"
	// CRDsCreate creates the CRDs of crds/ that do not exist and never
	// changes one that does.
	CRDsCreate = "Create"
	// CRDsCreateReplace creates the CRDs of crds/ and updates them to the
	// chart's version.
	CRDsCreateReplace = "CreateReplace"
)

// Drift detection modes of driftDetection.mode.
const (
	// DriftDetectionEnabled corrects a foreign change as soon as it is seen
	// (Plumb's drift policy Correct).
	DriftDetectionEnabled = "enabled"
	// DriftDetectionWarn only reports it (Plumb's drift policy Report).
	DriftDetectionWarn = "warn"
	// DriftDetectionDisabled neither corrects nor reports it: objects are
	// applied only when the render changes.
	DriftDetectionDisabled = "disabled"
)

// Release statuses of a history entry.
const (
	ReleaseStatusDeployed   = "deployed"
	ReleaseStatusSuperseded = "superseded"
	ReleaseStatusFailed     = "failed"
)

// MaxHistory is how many releases status.history keeps, newest first.
const MaxHistory = 5

// HelmReleaseSpec says which chart to render with which values, and how to
// apply it.
// +kubebuilder:validation:XValidation:rule="has(self.chart) != has(self.chartRef)",message="exactly one of spec.chart and spec.chartRef must be set"
type HelmReleaseSpec struct {
	// Chart is the template of the HelmChart render-controller creates and
	// owns for this release. Mutually exclusive with chartRef.
	// +optional
	Chart *HelmChartTemplate `json:"chart,omitempty"`

	// ChartRef names an existing source whose artifact is the chart: a
	// HelmChart, an OCIRepository pulling a chart (layerSelector
	// application/vnd.cncf.helm.chart.content.v1.tar+gzip, copy or
	// extract), or an ExternalArtifact holding one. Mutually exclusive
	// with chart.
	// +optional
	ChartRef *CrossNamespaceSourceReference `json:"chartRef,omitempty"`

	// CommonMetadata adds labels and annotations to every object the
	// chart's templates render, hooks included, after the post-renderers;
	// the CRDs of crds/ are left as they are, as Flux leaves them.
	// +optional
	CommonMetadata *kustomizev1.CommonMetadata `json:"commonMetadata,omitempty"`

	// HealthCheckExprs judge the health of the objects of a kind by CEL
	// expressions instead of the built-in rules, as a Kustomization's do
	// (docs/design/health-expressions.md): for the wait after each sync
	// and for hooks. One entry per apiVersion and kind.
	// +optional
	// +listType=map
	// +listMapKey=apiVersion
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=50
	HealthCheckExprs []kustomizev1.CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// KubeConfig names a Secret, in the HelmRelease's namespace, holding a
	// kubeconfig of another cluster: sync-controller applies, prunes,
	// watches for drift and checks health there, as for a
	// Kustomization's kubeConfig (docs/design/remote-clusters.md). The
	// status and events stay here. The chart is rendered with the
	// capabilities of render-controller's own cluster
	// (docs/design/helm.md).
	// +optional
	KubeConfig *kustomizev1.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Interval between two reconciles.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds the hooks and the wait for health of one sync;
	// defaults to 5m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ReleaseName is .Release.Name in the templates; defaults to
	// [<targetNamespace>-]<name>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	ReleaseName string `json:"releaseName,omitempty"`

	// TargetNamespace is .Release.Namespace and the namespace of the
	// chart's namespaced objects; defaults to the HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// StorageNamespace is the namespace of the release's records in
	// Helm's storage format (the sh.helm.release.v1.<release>.v<N>
	// Secrets that helm list, history, get and status read); defaults to
	// the HelmRelease's namespace, as in Flux. When it changes, the
	// records written so far move there.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// MaxHistory is how many release records Helm's storage keeps, the
	// newest ones; 0 keeps them all. Defaults to 5. status.history keeps
	// 5 whatever it is.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxHistory *int `json:"maxHistory,omitempty"`

	// DependsOn lists HelmReleases that must be ready before this one is
	// applied: Ready at their latest generation, or as an entry's
	// readyExpr says.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// ServiceAccountName is the ServiceAccount, in this namespace, that
	// sync-controller acts as when applying and pruning.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Install holds the settings of the first sync.
	// +optional
	Install *Install `json:"install,omitempty"`

	// Upgrade holds the settings of every later sync.
	// +optional
	Upgrade *Upgrade `json:"upgrade,omitempty"`

	// Rollback holds the settings of a rollback remediation.
	// +optional
	Rollback *Rollback `json:"rollback,omitempty"`

	// Uninstall holds the settings of an uninstall: a remediation, or the
	// deletion of the HelmRelease.
	// +optional
	Uninstall *Uninstall `json:"uninstall,omitempty"`

	// Test runs the chart's tests (its helm.sh/hook: test objects) after
	// each successful install or upgrade.
	// +optional
	Test *Test `json:"test,omitempty"`

	// Values are merged last, over the chart's values, its valuesFiles and
	// valuesFrom.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom are ConfigMaps and Secrets whose values are merged in
	// order, over the chart's values and under spec.values.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// PostRenderers change the rendered manifests, in order, before they
	// are applied.
	// +optional
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`

	// DriftDetection says what sync-controller does when the cluster drifts
	// from the render; enabled (correct) when unset.
	// +optional
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`

	// SyncPolicy is Automatic (every new render is released) or Manual
	// (each render is compared with the cluster by a dry-run, reported in
	// status.outOfSync, and released only when the plumb.dev/sync
	// annotation asks; drift is reported, not corrected). Plumb's, as in
	// a Kustomization.
	// +optional
	SyncPolicy kustomizev1.SyncPolicy `json:"syncPolicy,omitempty"`
	// SyncWindows are when a new render may be installed or upgraded, as
	// Argo CD's sync windows: outside them it is held until they open
	// (docs/api/helmrelease.md, "Sync windows"). SyncWindowPolicies of the
	// namespace that select the HelmRelease add theirs.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	SyncWindows []kustomizev1.SyncWindow `json:"syncWindows,omitempty"`
}

// HelmChartTemplate is the template of the HelmChart of a release.
type HelmChartTemplate struct {
	// ObjectMeta holds labels and annotations for the HelmChart.
	// +optional
	ObjectMeta *HelmChartTemplateObjectMeta `json:"metadata,omitempty"`

	// Spec of the HelmChart.
	// +required
	Spec HelmChartTemplateSpec `json:"spec"`
}

// HelmChartTemplateObjectMeta holds the labels and annotations of a HelmChart.
type HelmChartTemplateObjectMeta struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// HelmChartTemplateSpec is the spec of the HelmChart of a release.
type HelmChartTemplateSpec struct {
	// Chart is the chart's name in a HelmRepository, or its path in a
	// GitRepository's artifact.
	// +required
	// +kubebuilder:validation:MinLength=1
	Chart string `json:"chart"`

	// Version is a semver range (a HelmRepository source only); defaults to
	// "*".
	// +optional
	// +kubebuilder:default:="*"
	Version string `json:"version,omitempty"`

	// SourceRef is the HelmRepository or GitRepository of the chart.
	// +required
	SourceRef CrossNamespaceObjectReference `json:"sourceRef"`

	// Interval between two checks of the source; defaults to the
	// HelmRelease's interval.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// ReconcileStrategy: ChartVersion or Revision (see HelmChart).
	// +optional
	// +kubebuilder:default:=ChartVersion
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles are values files inside the chart, merged in order over
	// its values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips a file of valuesFiles the chart does
	// not have (see HelmChart).
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
}

// CrossNamespaceObjectReference names the source of a release's chart.
type CrossNamespaceObjectReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; defaults to the HelmRelease's namespace.
	// The HelmChart is created there.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// CrossNamespaceSourceReference names an existing source of a chart.
type CrossNamespaceSourceReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent: HelmChart, OCIRepository or ExternalArtifact.
	// +required
	// +kubebuilder:validation:Enum=HelmChart;OCIRepository;ExternalArtifact
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; defaults to the HelmRelease's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// Install holds the settings of a release's first sync.
type Install struct {
	// CRDs is what to do with the chart's crds/ folder: Skip, Create
	// (create missing CRDs, never change existing ones) or CreateReplace.
	// Defaults to Create, as in Helm.
	// +optional
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	CRDs string `json:"crds,omitempty"`

	// Strategy is what a failed install leads to: RemediateOnFailure
	// (remediation, the default) or RetryOnFailure.
	// +optional
	Strategy *Strategy `json:"strategy,omitempty"`

	// Remediation says how often a failed install is retried and whether
	// it is uninstalled (RemediateOnFailure).
	// +optional
	Remediation *InstallRemediation `json:"remediation,omitempty"`

	// Action holds the switches the install shares with the upgrade.
	ActionSwitches `json:",inline"`

	// CreateNamespace creates the release namespace when it is missing,
	// as Helm's --create-namespace does. The Namespace is created only
	// when missing and never pruned: deleting the HelmRelease leaves it.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`
}

// Upgrade holds the settings of a release's later syncs.
type Upgrade struct {
	// CRDs is what to do with the chart's crds/ folder: Skip, Create or
	// CreateReplace. Defaults to Skip, as in Helm.
	// +optional
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	CRDs string `json:"crds,omitempty"`

	// Strategy is what a failed upgrade leads to: RemediateOnFailure
	// (remediation, the default) or RetryOnFailure.
	// +optional
	Strategy *Strategy `json:"strategy,omitempty"`

	// Remediation says how often a failed upgrade is retried and whether
	// it is rolled back or uninstalled (RemediateOnFailure).
	// +optional
	Remediation *UpgradeRemediation `json:"remediation,omitempty"`

	// Action holds the switches the upgrade shares with the install.
	ActionSwitches `json:",inline"`

	// Force deletes and recreates an object the upgrade cannot change in
	// place (an immutable field changed), as plumb.dev/force: enabled
	// does for one object.
	// +optional
	Force bool `json:"force,omitempty"`

	// CleanupOnFail deletes the objects a failed upgrade created, as
	// Helm's --cleanup-on-fail: what existed before the upgrade stays.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`
}

// ValuesReference names a ConfigMap or Secret that holds values.
type ValuesReference struct {
	// Kind of the values referent.
	// +required
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`

	// Name of the ConfigMap or Secret, in the HelmRelease's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// ValuesKey is the data key holding the values; defaults to
	// values.yaml.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[\-._a-zA-Z0-9]+$`
	ValuesKey string `json:"valuesKey,omitempty"`

	// TargetPath is a dotted path (Helm's --set syntax) the key's value is
	// set at, as a single value instead of a YAML document of values.
	// +optional
	// +kubebuilder:validation:MaxLength=250
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9_\-.\\\/]|\[[0-9]{1,5}\])+$`
	TargetPath string `json:"targetPath,omitempty"`

	// Optional makes a missing ConfigMap, Secret or key no error.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// GetValuesKey returns valuesKey, values.yaml when unset.
func (in ValuesReference) GetValuesKey() string {
	if in.ValuesKey == "" {
		return "values.yaml"
	}
	return in.ValuesKey
}

// PostRenderer changes the rendered manifests.
type PostRenderer struct {
	// Kustomize applies patches and image overrides.
	// +optional
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// Kustomize is a kustomize post-renderer.
type Kustomize struct {
	// Patches are strategic-merge or JSON 6902 patches, with targets.
	// +optional
	Patches []kustomizev1.Patch `json:"patches,omitempty"`

	// Images override container image names, tags and digests.
	// +optional
	Images []kustomizev1.Image `json:"images,omitempty"`
}

// DriftDetection says what to do when the cluster drifts from the render.
type DriftDetection struct {
	// Mode: enabled corrects a foreign change as soon as it is seen, warn
	// only reports it (Drifted condition, DriftDetected event), disabled
	// does neither.
	// +optional
	// +kubebuilder:validation:Enum=enabled;warn;disabled
	Mode string `json:"mode,omitempty"`

	// Ignore rules remove fields from drift detection and correction.
	// +optional
	Ignore []kustomizev1.IgnoreRule `json:"ignore,omitempty"`
}

// Snapshot is one release of a HelmRelease: a render that sync-controller
// applied (or failed to).
type Snapshot struct {
	// Version is the release number: 1 for the install, one more for each
	// upgrade.
	// +required
	Version int `json:"version"`

	// Name is the release name.
	// +required
	Name string `json:"name"`

	// Namespace is the release namespace.
	// +required
	Namespace string `json:"namespace"`

	// ChartName is the name of the chart released.
	// +required
	ChartName string `json:"chartName"`

	// ChartVersion is the version of the chart released.
	// +required
	ChartVersion string `json:"chartVersion"`

	// ConfigDigest is the digest of the merged values.
	// +required
	ConfigDigest string `json:"configDigest"`

	// Digest is the digest of the rendered artifact applied.
	// +required
	Digest string `json:"digest"`

	// FirstDeployed is when the first release (the install) started; every
	// later release carries it, as in Helm.
	// +required
	FirstDeployed metav1.Time `json:"firstDeployed"`

	// LastDeployed is when the release last finished, or failed.
	// +required
	LastDeployed metav1.Time `json:"lastDeployed"`

	// Description says what the release was and how it ended, in Helm's
	// words: "Install complete", "Upgrade \"app\" failed: <why>",
	// "Rollback to 3" (at most 1024 characters).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// Status is deployed, superseded, failed, or uninstalled (an
	// uninstall remediation with uninstall.keepHistory).
	// +required
	// +kubebuilder:validation:Enum=deployed;superseded;failed;uninstalled
	Status string `json:"status"`

	// TestHooks are the chart's tests run against this release, by the
	// test hook's name, as Flux records them: set (possibly empty) once
	// the tests ran, absent while they did not.
	// +optional
	TestHooks *map[string]*TestHookStatus `json:"testHooks,omitempty"`

	// OCIDigest is the digest of the OCI artifact the chart of this
	// release came from (an OCIRepository's, or an ExternalArtifact's
	// whose revision holds a digest), as Flux records it; empty for a
	// HelmChart's chart. A rollback's entry carries its target's.
	// +optional
	OCIDigest string `json:"ociDigest,omitempty"`
}

// HelmReleaseStatus is what render-controller and sync-controller observed
// and produced. They share it as they share a Kustomization's:
// render-controller owns renderedArtifact, helmChart and Rendered;
// sync-controller owns the rest.
type HelmReleaseStatus struct {
	// ObservedGeneration is the generation of the spec last synced.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Released, Remediated, TestSuccess,
	// StorageFailed, Healthy, Drifted, DriftContested, OutOfSync (sync-controller);
	// Rendered (render-controller).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// HelmChart is the namespace/name of the HelmChart rendered.
	// +optional
	HelmChart string `json:"helmChart,omitempty"`

	// RenderedArtifact is the newest render, served by render-controller;
	// its revision is the chart version, its metadata the chart name and
	// the digest of the merged values.
	// +optional
	RenderedArtifact *meta.Artifact `json:"renderedArtifact,omitempty"`

	// LastAttemptedRevision is the chart version of the newest sync.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// LastAttemptedRevisionDigest is the digest of the OCI artifact of the
	// newest sync's chart (its chartRef's OCIRepository, or
	// ExternalArtifact whose revision holds a digest), as in Flux; empty
	// for a HelmChart's chart.
	// +optional
	LastAttemptedRevisionDigest string `json:"lastAttemptedRevisionDigest,omitempty"`

	// LastAttemptedConfigDigest is the values digest of the newest sync.
	// +optional
	LastAttemptedConfigDigest string `json:"lastAttemptedConfigDigest,omitempty"`

	// LastAttemptedGeneration is the generation of the newest install or
	// upgrade attempt; with lastAttemptedDigest it says which attempt the
	// failure counters count.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`

	// LastAttemptedDigest is the digest of the render the newest install
	// or upgrade attempted (Plumb's: a rollback applies another render).
	// +optional
	LastAttemptedDigest string `json:"lastAttemptedDigest,omitempty"`

	// LastAttemptedReleaseAction is install or upgrade: what the newest
	// attempt was.
	// +optional
	// +kubebuilder:validation:Enum=install;upgrade
	LastAttemptedReleaseAction string `json:"lastAttemptedReleaseAction,omitempty"`

	// LastAttemptedReleaseActionDuration is how long the newest attempt's
	// sync took, until it succeeded or failed.
	// +optional
	LastAttemptedReleaseActionDuration *metav1.Duration `json:"lastAttemptedReleaseActionDuration,omitempty"`

	// Failures counts the failed syncs of the newest attempt: installs,
	// upgrades, rollbacks and uninstalls. Reset, as the two below, when a
	// new attempt starts (a new generation, values or chart).
	// +optional
	Failures int64 `json:"failures,omitempty"`

	// InstallFailures counts the failed installs of the newest attempt;
	// reset when a new one starts.
	// +optional
	InstallFailures int64 `json:"installFailures,omitempty"`

	// UpgradeFailures counts the failed upgrades of the newest attempt;
	// reset when a new one starts.
	// +optional
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`

	// StorageNamespace is the namespace the release records are in: where
	// they were last written or moved to. When spec.storageNamespace
	// changes, sync-controller moves the records from here to there.
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// LastAppliedRevision is the chart version last applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// History holds the last releases, newest first.
	// +optional
	History []Snapshot `json:"history,omitempty"`

	// Inventory lists the objects the release applied.
	// +optional
	Inventory *kustomizev1.Inventory `json:"inventory,omitempty"`

	// Drift is the newest drift seen.
	// +optional
	Drift *kustomizev1.DriftStatus `json:"drift,omitempty"`

	// Sync is the newest sync operation and how far it got.
	// +optional
	Sync *kustomizev1.SyncProgress `json:"sync,omitempty"`

	kustomizev1.ManualSyncStatus `json:",inline"`
	// SyncWindow says, while the HelmRelease is outside its sync windows,
	// which windows keep syncs out, the revision held and when they open.
	// +optional
	SyncWindow *kustomizev1.SyncWindowStatus `json:"syncWindow,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmRelease renders a Helm chart with values and keeps the cluster equal
// to the result.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hr
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
type HelmRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmReleaseSpec   `json:"spec,omitempty"`
	Status HelmReleaseStatus `json:"status,omitempty"`
}

// HelmReleaseList is a list of HelmRelease.
// +kubebuilder:object:root=true
type HelmReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRelease `json:"items"`
}

// GetConditions returns the status conditions.
func (in *HelmRelease) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *HelmRelease) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetReleaseName returns spec.releaseName, or [<targetNamespace>-]<name>
// as Flux defaults it. A default longer than Helm's 53 characters is
// shortened as Flux shortens it: its first 40 characters, a dash and 12
// hex digits of its sha256, so that two long names stay apart.
func (in *HelmRelease) GetReleaseName() string {
	if in.Spec.ReleaseName != "" {
		return in.Spec.ReleaseName
	}
	name := in.Name
	if in.Spec.TargetNamespace != "" {
		name = in.Spec.TargetNamespace + "-" + in.Name
	}
	if len(name) <= maxReleaseName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
}

// maxReleaseName is Helm's bound on a release name.
const maxReleaseName = 53

// GetReleaseNamespace returns spec.targetNamespace, or the HelmRelease's
// namespace.
func (in *HelmRelease) GetReleaseNamespace() string {
	if in.Spec.TargetNamespace != "" {
		return in.Spec.TargetNamespace
	}
	return in.Namespace
}

// GetTimeout returns spec.timeout, 5m when unset.
func (in *HelmRelease) GetTimeout() metav1.Duration {
	if in.Spec.Timeout != nil {
		return *in.Spec.Timeout
	}
	return metav1.Duration{Duration: 5 * time.Minute}
}

// GetInstallCRDs returns install.crds, Create when unset.
func (in *HelmRelease) GetInstallCRDs() string {
	if in.Spec.Install != nil && in.Spec.Install.CRDs != "" {
		return in.Spec.Install.CRDs
	}
	return CRDsCreate
}

// GetUpgradeCRDs returns upgrade.crds, Skip when unset.
func (in *HelmRelease) GetUpgradeCRDs() string {
	if in.Spec.Upgrade != nil && in.Spec.Upgrade.CRDs != "" {
		return in.Spec.Upgrade.CRDs
	}
	return CRDsSkip
}

// GetDriftDetectionMode returns driftDetection.mode, enabled when unset.
func (in *HelmRelease) GetDriftDetectionMode() string {
	if in.Spec.DriftDetection != nil && in.Spec.DriftDetection.Mode != "" {
		return in.Spec.DriftDetection.Mode
	}
	return DriftDetectionEnabled
}

// GetHelmChartName returns the name of the HelmChart render-controller
// creates for spec.chart: <namespace>-<name>, as Flux names it.
func (in *HelmRelease) GetHelmChartName() string { return in.Namespace + "-" + in.Name }

// GetHelmChartNamespace returns the namespace of the HelmChart rendered:
// that of spec.chart.spec.sourceRef or spec.chartRef, defaulting to the
// HelmRelease's.
func (in *HelmRelease) GetHelmChartNamespace() string {
	switch {
	case in.Spec.ChartRef != nil && in.Spec.ChartRef.Namespace != "":
		return in.Spec.ChartRef.Namespace
	case in.Spec.Chart != nil && in.Spec.Chart.Spec.SourceRef.Namespace != "":
		return in.Spec.Chart.Spec.SourceRef.Namespace
	}
	return in.Namespace
}

// GetChartSourceKind returns the kind of the source whose artifact is the
// chart: spec.chartRef's kind, or HelmChart for spec.chart.
func (in *HelmRelease) GetChartSourceKind() string {
	if in.Spec.ChartRef != nil && in.Spec.ChartRef.Kind != "" {
		return in.Spec.ChartRef.Kind
	}
	return "HelmChart"
}

// GetHelmChart returns the namespace and name of the source this release
// renders (GetChartSourceKind says its kind): spec.chartRef's, or the
// HelmChart render-controller creates for spec.chart.
func (in *HelmRelease) GetHelmChart() (namespace, name string) {
	if in.Spec.ChartRef != nil {
		return in.GetHelmChartNamespace(), in.Spec.ChartRef.Name
	}
	return in.GetHelmChartNamespace(), in.GetHelmChartName()
}

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmRelease) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmRelease) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *HelmRelease) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmRelease) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// GetSyncPolicy returns the sync policy, Automatic when unset.
func (in *HelmRelease) GetSyncPolicy() kustomizev1.SyncPolicy {
	if in.Spec.SyncPolicy == "" {
		return kustomizev1.SyncPolicyAutomatic
	}
	return in.Spec.SyncPolicy
}
