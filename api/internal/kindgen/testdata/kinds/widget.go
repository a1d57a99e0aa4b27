// Package kinds is kindgen's fixture: kinds that get every method, some,
// or none, and types that are not kinds. zz_generated.kinds.go is what
// kindgen writes for it (go test ./internal/kindgen -update rewrites it).
package kinds

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// Widget has every field kindgen knows, so it gets every method.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Interval      metav1.Duration  `json:"interval"`
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
	Suspend       bool             `json:"suspend,omitempty"`
}

type WidgetStatus struct {
	Artifact *meta.Artifact `json:"artifact,omitempty"`
}

// WidgetList is not a kind: it has ListMeta, not ObjectMeta.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// WidgetTemplate has a spec but is not a kind.
type WidgetTemplate struct {
	Spec WidgetSpec `json:"spec"`
}

// The fixture's kinds are what api/meta asks of them.
var (
	_ meta.Scheduled      = &Widget{}
	_ meta.Retried        = &Widget{}
	_ meta.Suspendable    = &Widget{}
	_ meta.ArtifactHolder = &Widget{}
	_ meta.Scheduled      = &Gadget{}
	_ meta.Retried        = &Gadget{}
	_ meta.Suspendable    = &Gadget{}
)
