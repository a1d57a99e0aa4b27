package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// HelmRepositoryKind is the kind name of HelmRepository.
const HelmRepositoryKind = "HelmRepository"

// Condition and event reasons specific to HelmRepository (the shared ones
// are in api/meta and gitrepository_types.go; docs/api/helmrepository.md
// lists them all).
const (
	// IndexationFailedReason: the index could not be fetched (network,
	// HTTP status, over --helm-index-max-size) or is not a valid index.
	IndexationFailedReason = "IndexationFailed"
)

// HelmRepository types.
const (
	// HelmRepositoryTypeDefault is an HTTP(S) chart repository with an
	// index.yaml.
	HelmRepositoryTypeDefault = "default"
	// HelmRepositoryTypeOCI is an OCI registry holding charts as artifacts.
	HelmRepositoryTypeOCI = "oci"
)

// HelmRepositorySpec says where a Helm chart repository is and how to reach it.
// +kubebuilder:validation:XValidation:rule="self.type != 'oci' || self.url.startsWith('oci://')",message="spec.url must start with oci:// when spec.type is oci"
// +kubebuilder:validation:XValidation:rule="self.type == 'oci' || self.url.startsWith('http://') || self.url.startsWith('https://')",message="spec.url must start with http:// or https:// unless spec.type is oci"
type HelmRepositorySpec struct {
	// URL of the repository: http(s):// for an index-based repository,
	// oci:// for an OCI registry (with type oci).
	// +required
	// +kubebuilder:validation:Pattern="^(http|https|oci)://.*$"
	URL string `json:"url"`

	// Type of the repository: default (HTTP with an index.yaml) or oci.
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:Enum=default;oci
	Type string `json:"type,omitempty"`

	// SecretRef names a Secret in the same namespace with credentials:
	// username and password for basic auth, and tls.crt, tls.key and ca.crt
	// for TLS (when certSecretRef is not set).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with the TLS
	// client certificate (tls.crt, tls.key) and CA (ca.crt) to connect with.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// PassCredentials sends the credentials of secretRef also to hosts
	// other than the repository's, which chart URLs in the index may name.
	// Off by default, as in Helm and Flux.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`

	// Insecure allows plain HTTP for an oci:// registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Interval between two fetches of the index.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval,omitempty"`

	// Timeout bounds every request to the repository of one reconcile.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// HelmRepositoryStatus is what source-controller observed and produced.
type HelmRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, ArtifactInStorage.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is where the stored index is served (type default only).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the stored, verified index.yaml (type default only).
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmRepository is a Helm chart repository: source-controller fetches,
// verifies and serves its index (HTTP), or checks it is reachable (OCI).
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=helmrepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmRepositorySpec   `json:"spec,omitempty"`
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// HelmRepositoryList is a list of HelmRepository.
// +kubebuilder:object:root=true
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRepository `json:"items"`
}

// GetConditions returns the status conditions.
func (in *HelmRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *HelmRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetRequeueAfter returns the interval between fetches, 10m when unset.
func (in *HelmRepository) GetRequeueAfter() time.Duration {
	if in.Spec.Interval.Duration == 0 {
		return 10 * time.Minute
	}
	return in.Spec.Interval.Duration
}

// GetTimeout returns the bound for requests to the repository, 60s when unset.
func (in *HelmRepository) GetTimeout() metav1.Duration {
	if in.Spec.Timeout == nil {
		return metav1.Duration{Duration: 60 * time.Second}
	}
	return *in.Spec.Timeout
}

// IsOCI reports whether the repository is an OCI registry.
func (in *HelmRepository) IsOCI() bool { return in.Spec.Type == HelmRepositoryTypeOCI }

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmRepository) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *HelmRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
