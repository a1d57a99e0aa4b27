package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ExternalArtifactKind is the kind name of ExternalArtifact.
const ExternalArtifactKind = "ExternalArtifact"

// ExternalArtifactSpec names, optionally, the object the artifact is
// produced from.
type ExternalArtifactSpec struct {
	// SourceRef is the custom resource the producer makes the artifact
	// from; render-controller names it while the artifact is missing, so
	// a user knows where to look.
	// +optional
	SourceRef *ExternalArtifactSourceReference `json:"sourceRef,omitempty"`
}

// ExternalArtifactSourceReference names the producer's object.
type ExternalArtifactSourceReference struct {
	// APIVersion of the referent, e.g. example.com/v1.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; the ExternalArtifact's when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// ExternalArtifactStatus is written by the producer, not by Plumb.
type ExternalArtifactStatus struct {
	// Artifact is the tar.gz the producer stored and serves over HTTP.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// Conditions the producer reports (Ready, SourceVerified).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExternalArtifact is Flux's generic artifact kind: any controller may
// produce a tar.gz artifact and describe it in status.artifact, and a
// Kustomization renders it with sourceRef.kind ExternalArtifact. No Plumb
// controller reconciles it.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExternalArtifact struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExternalArtifactSpec   `json:"spec,omitempty"`
	Status ExternalArtifactStatus `json:"status,omitempty"`
}

// ExternalArtifactList is a list of ExternalArtifact.
// +kubebuilder:object:root=true
type ExternalArtifactList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExternalArtifact `json:"items"`
}
