package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// HelmChartKind is the kind name of HelmChart.
const HelmChartKind = "HelmChart"

// Condition types specific to HelmChart (FetchFailed and
// ArtifactInStorage are GitRepository's).
const (
	// BuildFailedCondition is True while the last build of the chart
	// (loading, dependencies, values files, packaging) failed.
	BuildFailedCondition = "BuildFailed"
)

// Condition and event reasons specific to HelmChart (docs/api/helmchart.md
// lists them all).
const (
	// ChartPullFailedReason: the chart could not be resolved or downloaded
	// from its source.
	ChartPullFailedReason = "ChartPullFailed"
	// ChartPackageFailedReason: the chart could not be loaded, completed
	// with its dependencies and values files, or packaged.
	ChartPackageFailedReason = "ChartPackageFailed"
)

// Reconcile strategies of a HelmChart.
const (
	// ReconcileStrategyChartVersion builds a new artifact when the chart's
	// version changes.
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision builds a new artifact for every new revision
	// of the source (a GitRepository commit), versioning the chart
	// <version>+<revision>.
	ReconcileStrategyRevision = "Revision"
)

// HelmChartSpec says which chart to fetch from which source.
type HelmChartSpec struct {
	// Chart is the chart's name in a HelmRepository, or its path in a
	// GitRepository's artifact.
	// +required
	// +kubebuilder:validation:MinLength=1
	Chart string `json:"chart"`

	// Version is a semver range of the chart version (a HelmRepository
	// source only); the highest match is fetched. Defaults to "*", the
	// newest stable version.
	// +optional
	// +kubebuilder:default:="*"
	Version string `json:"version,omitempty"`

	// SourceRef is the HelmRepository or GitRepository the chart comes from,
	// in the same namespace.
	// +required
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`

	// Interval between two checks of the source for a new chart.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// ReconcileStrategy says what makes a new artifact: a new chart version
	// (ChartVersion) or a new revision of the source (Revision).
	// +optional
	// +kubebuilder:default:=ChartVersion
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles are values files inside the chart, merged in order over
	// the chart's values.yaml into the packaged chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips a file of valuesFiles the chart does
	// not have instead of failing the build; status.observedValuesFiles
	// lists the files merged.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Verify makes a chart version from an OCI HelmRepository an artifact
	// only when its manifest carries a signature that
	// spec.verify.secretRef trusts, as an OCIRepository's (the same
	// providers and Secret keys); the last verified chart is served
	// meanwhile. Refused (stalled) for any other source, which has no
	// OCI signatures: it is never silently skipped.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// LocalHelmChartSourceReference names the source of a HelmChart.
type LocalHelmChartSourceReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// HelmChartStatus is what source-controller observed and produced.
type HelmChartStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ObservedSourceArtifactRevision is the revision of the source artifact
	// the chart was last built from.
	// +optional
	ObservedSourceArtifactRevision string `json:"observedSourceArtifactRevision,omitempty"`

	// ObservedChartName is the name of the chart last built.
	// +optional
	ObservedChartName string `json:"observedChartName,omitempty"`

	// ObservedValuesFiles are the valuesFiles merged into the last build
	// (without the missing ones skipped under ignoreMissingValuesFiles).
	// +optional
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, BuildFailed,
	// ArtifactInStorage, SourceVerified (with spec.verify).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the packaged chart (.tgz), its revision the chart version.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmChart is a Helm chart from a HelmRepository or a GitRepository,
// packaged with its dependencies into a digest-addressed .tgz artifact.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hc
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source Kind",type=string,JSONPath=`.spec.sourceRef.kind`
// +kubebuilder:printcolumn:name="Source Name",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmChartSpec   `json:"spec,omitempty"`
	Status HelmChartStatus `json:"status,omitempty"`
}

// HelmChartList is a list of HelmChart.
// +kubebuilder:object:root=true
type HelmChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmChart `json:"items"`
}

// GetConditions returns the status conditions.
func (in *HelmChart) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *HelmChart) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetReconcileStrategy returns the reconcile strategy, ChartVersion when unset.
func (in *HelmChart) GetReconcileStrategy() string {
	if in.Spec.ReconcileStrategy == "" {
		return ReconcileStrategyChartVersion
	}
	return in.Spec.ReconcileStrategy
}

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmChart) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmChart) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *HelmChart) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmChart) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
