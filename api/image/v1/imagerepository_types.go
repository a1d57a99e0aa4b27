package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ImageRepositoryKind is the kind name of ImageRepository.
const ImageRepositoryKind = "ImageRepository"

// DefaultExclusionList is spec.exclusionList when it is unset: cosign's
// signature tags (sha256-<hex>.sig), which are no image to deploy. Flux's
// default.
var DefaultExclusionList = []string{`^.*\.sig$`}

// ImageRepositorySpec says which image's tags to scan, and how to reach
// its registry.
type ImageRepositorySpec struct {
	// Image is the image repository's name, without tag or digest
	// (ghcr.io/org/app; docker.io/library/ is implied for a bare name).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// Interval between two scans of the tags.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds one scan, every page of the tag list included;
	// spec.interval when unset, and never under a second.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson in
	// the same namespace whose entry for the registry's host gives the
	// credentials (kubectl create secret docker-registry). They are sent
	// over HTTPS only, unless spec.insecure is true.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with a CA
	// certificate (ca.crt) to trust and/or a client certificate and key
	// (tls.crt, tls.key) for the registry's HTTPS connections (Flux's
	// keys).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// ExclusionList holds regular expressions (Go's syntax); a tag that
	// matches one is dropped from the scan. Defaults to Flux's, which
	// drops cosign's signature tags.
	// +optional
	// +kubebuilder:default:={"^.*\\.sig$"}
	// +kubebuilder:validation:MaxItems=25
	// +kubebuilder:validation:items:MaxLength=1024
	ExclusionList []string `json:"exclusionList,omitempty"`

	// Suspend stops the scans while true; the tags of the last scan stay.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ScanResult is what the last scan found.
type ScanResult struct {
	// Revision is a digest of the scanned tags (sorted), so that a reader
	// sees whether two scans found the same.
	// +optional
	Revision string `json:"revision,omitempty"`

	// TagCount is the number of tags the scan kept (after
	// spec.exclusionList).
	// +required
	TagCount int `json:"tagCount"`

	// ScanTime is when the scan finished.
	// +optional
	ScanTime metav1.Time `json:"scanTime,omitempty"`

	// LatestTags are the first ten of the tags in descending alphabetical
	// order: a sample for people, not the list policies read.
	// +optional
	LatestTags []string `json:"latestTags,omitempty"`
}

// ImageRepositoryStatus is what image-controller observed of the
// repository.
type ImageRepositoryStatus struct {
	// The reconcile.plumb.dev/requestedAt value last handled
	// (requestable.go).
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CanonicalImageName is spec.image with what it implies made
	// explicit (index.docker.io/library/alpine for alpine).
	// +optional
	CanonicalImageName string `json:"canonicalImageName,omitempty"`

	// LastScanResult is what the last successful scan found.
	// +optional
	LastScanResult *ScanResult `json:"lastScanResult,omitempty"`

	// ObservedExclusionList is the exclusion list of that scan.
	// +optional
	ObservedExclusionList []string `json:"observedExclusionList,omitempty"`
}

// ImageRepository scans the tags of one image in a registry.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imgrepo;imagerepo
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Tags",type=string,JSONPath=`.status.lastScanResult.tagCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Last scan",type=string,JSONPath=`.status.lastScanResult.scanTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImageRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageRepositorySpec   `json:"spec,omitempty"`
	Status ImageRepositoryStatus `json:"status,omitempty"`
}

// ImageRepositoryList is a list of ImageRepository.
// +kubebuilder:object:root=true
type ImageRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageRepository `json:"items"`
}

// GetConditions returns the status conditions.
func (in *ImageRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImageRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *ImageRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ImageRepository) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetTimeout returns the bound of one scan: spec.timeout, else
// spec.interval, and at least a second (Flux's rule).
func (in *ImageRepository) GetTimeout() time.Duration {
	d := in.Spec.Interval.Duration
	if in.Spec.Timeout != nil {
		d = in.Spec.Timeout.Duration
	}
	return max(d, time.Second)
}

// GetExclusionList returns spec.exclusionList, or DefaultExclusionList
// when it is empty.
func (in *ImageRepository) GetExclusionList() []string {
	if len(in.Spec.ExclusionList) > 0 {
		return in.Spec.ExclusionList
	}
	return DefaultExclusionList
}
