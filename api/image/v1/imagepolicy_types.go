package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ImagePolicyKind is the kind name of ImagePolicy.
const ImagePolicyKind = "ImagePolicy"

// DefaultDigestInterval is how often the latest tag's digest is read
// again with digestReflectionPolicy Always and no spec.interval (Flux's).
const DefaultDigestInterval = 10 * time.Minute

// ImagePolicySpec says how to choose the latest image among an
// ImageRepository's tags.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')",message="spec.interval is only accepted when spec.digestReflectionPolicy is Always"
type ImagePolicySpec struct {
	// ImageRepositoryRef names the ImageRepository whose tags are chosen
	// from. A namespace other than the policy's is refused while
	// image-controller runs with --no-cross-namespace-refs.
	// +required
	ImageRepositoryRef meta.NamespacedObjectReference `json:"imageRepositoryRef"`

	// Policy is the rule that orders the tags; exactly one of semver,
	// alphabetical and numerical.
	// +required
	Policy ImagePolicyChoice `json:"policy"`

	// FilterTags keeps only the tags that match a pattern, and may order
	// them by a part of the tag rather than the whole.
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// DigestReflectionPolicy says when status.latestRef.digest is read
	// from the registry: Never (left empty), IfNotPresent (read once per
	// chosen tag) or Always (read again every spec.interval, for a tag
	// that is pushed anew).
	// +optional
	// +kubebuilder:default:=Never
	DigestReflectionPolicy ReflectionPolicy `json:"digestReflectionPolicy,omitempty"`

	// Interval between two reads of the digest with
	// digestReflectionPolicy Always; 10m when unset. Refused with another
	// policy, as nothing would read it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Suspend stops the policy's reconciles while true; its latest image
	// stays.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ReflectionPolicy says when a value is read from the registry into the
// status.
// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
type ReflectionPolicy string

// The reflection policies (Flux's).
const (
	// ReflectAlways reads the value on every reconcile.
	ReflectAlways ReflectionPolicy = "Always"
	// ReflectIfNotPresent reads it when the status has none for the
	// chosen tag.
	ReflectIfNotPresent ReflectionPolicy = "IfNotPresent"
	// ReflectNever never reads it.
	ReflectNever ReflectionPolicy = "Never"
)

// ImagePolicyChoice is one of the ordering rules.
// +kubebuilder:validation:XValidation:rule="(has(self.semver) ? 1 : 0) + (has(self.alphabetical) ? 1 : 0) + (has(self.numerical) ? 1 : 0) == 1",message="exactly one of semver, alphabetical and numerical must be set"
type ImagePolicyChoice struct {
	// SemVer chooses the highest semantic version in a range.
	// +optional
	SemVer *SemVerPolicy `json:"semver,omitempty"`

	// Alphabetical orders the tags as strings.
	// +optional
	Alphabetical *AlphabeticalPolicy `json:"alphabetical,omitempty"`

	// Numerical orders the tags as numbers; every tag that passes
	// filterTags must be one.
	// +optional
	Numerical *NumericalPolicy `json:"numerical,omitempty"`
}

// SemVerPolicy chooses the highest version within a range.
type SemVerPolicy struct {
	// Range of versions (Masterminds/semver's syntax: ">=1.0.0 <2.0.0",
	// "~1.4", "^2"); the highest tag within it is the latest image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Range string `json:"range"`
}

// AlphabeticalPolicy chooses the last or first tag in byte order.
type AlphabeticalPolicy struct {
	// Order: asc chooses the last tag in ascending order (Z of A..Z), desc
	// the first (A).
	// +optional
	// +kubebuilder:default:="asc"
	// +kubebuilder:validation:Enum=asc;desc
	Order string `json:"order,omitempty"`
}

// NumericalPolicy chooses the highest or lowest number.
type NumericalPolicy struct {
	// Order: asc chooses the highest number (9 of 0..9), desc the lowest.
	// +optional
	// +kubebuilder:default:="asc"
	// +kubebuilder:validation:Enum=asc;desc
	Order string `json:"order,omitempty"`
}

// The orders of AlphabeticalPolicy and NumericalPolicy.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// TagFilter keeps the tags that match Pattern and, with Extract, orders
// them by what Extract makes of each match.
type TagFilter struct {
	// Pattern is a regular expression (Go's syntax) a tag must match.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Pattern string `json:"pattern,omitempty"`

	// Extract is a template over Pattern's capture groups ($1, ${name});
	// its expansion for a tag, not the tag, is what the policy orders
	// ("main-(?P<ts>[0-9]+)-.*" with "$ts" orders by the timestamp).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Extract string `json:"extract,omitempty"`
}

// ImageRef is an image chosen by a policy.
type ImageRef struct {
	// Name is the image's name: the ImageRepository's spec.image.
	// +required
	Name string `json:"name"`
	// Tag is the chosen tag.
	// +required
	Tag string `json:"tag"`
	// Digest is the manifest digest of the tag, per
	// digestReflectionPolicy.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// String is name:tag, and @digest when there is one.
func (in *ImageRef) String() string {
	s := in.Name + ":" + in.Tag
	if in.Digest != "" {
		s += "@" + in.Digest
	}
	return s
}

// ImagePolicyStatus is the latest image the policy chose.
type ImagePolicyStatus struct {
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

	// LatestRef is the image the policy chose from the repository's last
	// scan.
	// +optional
	LatestRef *ImageRef `json:"latestRef,omitempty"`

	// ObservedPreviousRef is the LatestRef before the last change of it.
	// +optional
	ObservedPreviousRef *ImageRef `json:"observedPreviousRef,omitempty"`
}

// ImagePolicy chooses the latest image among an ImageRepository's tags.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imgpol;imagepol
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.latestRef.name`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.status.latestRef.tag`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImagePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImagePolicySpec   `json:"spec,omitempty"`
	Status ImagePolicyStatus `json:"status,omitempty"`
}

// ImagePolicyList is a list of ImagePolicy.
// +kubebuilder:object:root=true
type ImagePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePolicy `json:"items"`
}

// GetConditions returns the status conditions.
func (in *ImagePolicy) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImagePolicy) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *ImagePolicy) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ImagePolicy) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetDigestReflectionPolicy returns spec.digestReflectionPolicy, Never
// when unset.
func (in *ImagePolicy) GetDigestReflectionPolicy() ReflectionPolicy {
	if in.Spec.DigestReflectionPolicy == "" {
		return ReflectNever
	}
	return in.Spec.DigestReflectionPolicy
}

// GetDigestInterval returns how often the digest is read again: with
// Always, spec.interval or DefaultDigestInterval; else zero, as the
// policy then changes only when its repository's tags do.
func (in *ImagePolicy) GetDigestInterval() time.Duration {
	if in.GetDigestReflectionPolicy() != ReflectAlways {
		return 0
	}
	if in.Spec.Interval == nil || in.Spec.Interval.Duration <= 0 {
		return DefaultDigestInterval
	}
	return in.Spec.Interval.Duration
}
