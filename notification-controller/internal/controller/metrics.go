package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/metrics"
)

// Metrics are the per-object metrics of notification-controller's three
// kinds: pkg/metrics' set, the same names every controller has, one set
// per kind (plumb_notification_provider_…, _alert_…, _receiver_…), and
// Flux's gotk_* series of the three kinds. A nil *Metrics records nothing.
type Metrics struct {
	Providers, Alerts, Receivers *metrics.Object
}

// NewMetrics creates the metrics and registers them with reg
// (controller-runtime's metrics.Registry in the binary, so /metrics serves
// them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	set := func(subsystem, kind string) *metrics.Object {
		return metrics.NewObject(reg, metrics.Spec{Subsystem: subsystem, Kind: kind, Condition: meta.ReadyCondition, Toolkit: true})
	}
	return &Metrics{
		Providers: set("notification_provider", notificationv1.ProviderKind),
		Alerts:    set("notification_alert", notificationv1.AlertKind),
		Receivers: set("notification_receiver", notificationv1.ReceiverKind),
	}
}

func (m *Metrics) providers() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Providers
}

func (m *Metrics) alerts() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Alerts
}

func (m *Metrics) receivers() *metrics.Object {
	if m == nil {
		return nil
	}
	return m.Receivers
}

// readFailed ends a reconcile whose object could not be read. A deleted
// object (the kinds have no finalizer) has its series dropped, as the
// other controllers do in their finalizers, so that a dashboard does not
// keep counting it.
func readFailed(m *metrics.Object, req ctrl.Request, err error) error {
	if apierrors.IsNotFound(err) {
		m.Forget(req.Namespace, req.Name)
		return nil
	}
	return err
}
