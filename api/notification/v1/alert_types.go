package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// AlertKind is the kind name of Alert.
const AlertKind = "Alert"

// AlertSpec says which events become alerts through which provider.
type AlertSpec struct {
	// ProviderRef names the Provider in the same namespace.
	// +required
	ProviderRef meta.LocalObjectReference `json:"providerRef"`

	// EventSeverity is the lowest severity sent: info sends info and error
	// events, error sends only error events.
	// +optional
	// +kubebuilder:default=info
	// +kubebuilder:validation:Enum=info;error
	EventSeverity string `json:"eventSeverity,omitempty"`

	// EventSources are the objects whose events are sent. A namespace other
	// than the Alert's (or "*", every namespace) is refused while
	// notification-controller runs with --no-cross-namespace-refs.
	// +required
	// +kubebuilder:validation:MinItems=1
	EventSources []CrossNamespaceObjectReference `json:"eventSources"`

	// InclusionList holds regular expressions; when set, only events whose
	// message matches one of them are sent.
	// +optional
	InclusionList []string `json:"inclusionList,omitempty"`

	// ExclusionList holds regular expressions; events whose message matches
	// one of them are dropped.
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// EventMetadata is added to the metadata of every event sent.
	// +optional
	EventMetadata map[string]string `json:"eventMetadata,omitempty"`

	// Summary is a short line added to every alert. It is a Go text/template
	// over the event (see docs/api/alert.md, "Templates"); a summary without
	// {{ }} actions is sent as written.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Summary string `json:"summary,omitempty"`

	// MessageTemplate, when set, replaces the event's message in every alert
	// with its output: a Go text/template over the event, like Summary. An
	// event it fails on is sent with its own message.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// Suspend stops sending while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Alert routes matching events to a Provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AlertSpec `json:"spec,omitempty"`
	Status Status    `json:"status,omitempty"`
}

// AlertList is a list of Alert.
// +kubebuilder:object:root=true
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

// GetConditions returns the status conditions.
func (in *Alert) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Alert) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *Alert) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Alert) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }
