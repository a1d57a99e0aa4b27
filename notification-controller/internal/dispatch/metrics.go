package dispatch

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of alert delivery, served on /metrics. Providers are labelled by
// namespace, name and type; the address is never a label (it can be a
// secret). A nil *Metrics records nothing.
type Metrics struct {
	eventsReceived    *prometheus.CounterVec
	eventsDispatched  *prometheus.CounterVec
	eventsFailed      *prometheus.CounterVec
	eventsRateLimited *prometheus.CounterVec
	dispatchDuration  *prometheus.HistogramVec
	queueLength       *prometheus.GaugeVec
}

// NewMetrics creates the delivery metrics and registers them with reg
// (controller-runtime's metrics.Registry in the binary). One set serves
// every Dispatcher of a process.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		eventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_notification_events_received_total",
			Help: "Events read from the stream, by outcome: valid or invalid.",
		}, []string{"outcome"}),
		eventsDispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_notification_events_dispatched_total",
			Help: "Events a provider accepted.",
		}, []string{"namespace", "provider", "type"}),
		eventsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_notification_events_failed_total",
			Help: "Events a provider did not accept after all retries.",
		}, []string{"namespace", "provider", "type"}),
		eventsRateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_notification_events_rate_limited_total",
			Help: "Events not sent because an identical one went to the provider within --rate-limit-interval.",
		}, []string{"namespace", "provider", "type"}),
		dispatchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plumb_notification_dispatch_duration_seconds",
			Help:    "Duration of one delivery attempt to a provider.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"type"}),
		queueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_notification_provider_queue_length",
			Help: "Deliveries waiting on a provider's own queue.",
		}, []string{"namespace", "provider"}),
	}
	reg.MustRegister(m.eventsReceived, m.eventsDispatched, m.eventsFailed, m.eventsRateLimited, m.dispatchDuration, m.queueLength)
	return m
}

func (m *Metrics) received(valid bool) {
	if m == nil {
		return
	}
	outcome := "invalid"
	if valid {
		outcome = "valid"
	}
	m.eventsReceived.WithLabelValues(outcome).Inc()
}

// delivered counts one event's outcome at a provider: "dispatched",
// "failed" or "rateLimited".
func (m *Metrics) delivered(outcome string, labels ...string) {
	if m == nil {
		return
	}
	switch outcome {
	case "dispatched":
		m.eventsDispatched.WithLabelValues(labels...).Inc()
	case "failed":
		m.eventsFailed.WithLabelValues(labels...).Inc()
	case "rateLimited":
		m.eventsRateLimited.WithLabelValues(labels...).Inc()
	}
}

func (m *Metrics) attempt(providerType string, start time.Time) {
	if m != nil {
		m.dispatchDuration.WithLabelValues(providerType).Observe(time.Since(start).Seconds())
	}
}

func (m *Metrics) queued(namespace, provider string, n int) {
	if m != nil {
		m.queueLength.WithLabelValues(namespace, provider).Set(float64(n))
	}
}
