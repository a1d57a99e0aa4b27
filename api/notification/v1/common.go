package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// CrossNamespaceObjectReference names an object or, with name "*" and
// matchLabels, a set of objects of one kind.
type CrossNamespaceObjectReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	// +kubebuilder:validation:Enum=GitRepository;HelmRepository;HelmChart;OCIRepository;Bucket;Kustomization;HelmRelease;Receiver;Alert;Provider;ImageRepository;ImagePolicy;ImageUpdateAutomation;ObjectSet
	Kind string `json:"kind"`

	// Name of the referent; "*" matches every name, and a name may contain
	// "*" wildcards.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; defaults to the referrer's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// MatchLabels narrows a wildcard name to objects with these labels.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// Status is the status shared by Provider, Alert and Receiver.
type Status struct {
	// The reconcile.plumb.dev/requestedAt value last handled: `plumb
	// reconcile receiver|alert|alert-provider` and `plumb resume` wait for
	// it (requestable.go).
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
