package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/metrics"
)

// Metrics are the per-object metrics of image-controller's kinds:
// pkg/metrics' set (plumb_image_repository_…, plumb_image_policy_…,
// plumb_image_update_automation_…), a count of scans, and Flux's gotk_*
// series of each kind. A nil *Metrics
// records nothing.
type Metrics struct {
	Repositories, Policies, Automations *metrics.Object
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		Repositories: metrics.NewObject(reg, metrics.Spec{Subsystem: "image_repository", Kind: imagev1.ImageRepositoryKind,
			Condition: meta.ReadyCondition, Toolkit: true,
			Work: "scans_total", WorkHelp: "Scans of the ImageRepository's registry that were started."}),
		Policies: metrics.NewObject(reg, metrics.Spec{Subsystem: "image_policy", Kind: imagev1.ImagePolicyKind,
			Condition: meta.ReadyCondition, Toolkit: true}),
		Automations: metrics.NewObject(reg, metrics.Spec{Subsystem: "image_update_automation", Kind: imagev1.ImageUpdateAutomationKind,
			Condition: meta.ReadyCondition, Toolkit: true}),
	}
}

func (m *Metrics) repositories() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Repositories
}

func (m *Metrics) policies() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Policies
}

func (m *Metrics) automations() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Automations
}
