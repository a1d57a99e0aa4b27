package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of alert delivery, served on /metrics. Providers are labelled by
// namespace, name and type; the address is never a label (it can be a
// secret).
var (
	eventsReceived = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_notification_events_received_total",
		Help: "Events read from the stream, by outcome: valid or invalid.",
	}, []string{"outcome"})
	eventsDispatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_notification_events_dispatched_total",
		Help: "Events a provider accepted.",
	}, []string{"namespace", "provider", "type"})
	eventsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_notification_events_failed_total",
		Help: "Events a provider did not accept after all retries.",
	}, []string{"namespace", "provider", "type"})
	eventsRateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_notification_events_rate_limited_total",
		Help: "Events not sent because an identical one went to the provider within --rate-limit-interval.",
	}, []string{"namespace", "provider", "type"})
	dispatchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plumb_notification_dispatch_duration_seconds",
		Help:    "Duration of one delivery attempt to a provider.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"type"})
	queueLength = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "plumb_notification_provider_queue_length",
		Help: "Deliveries waiting on a provider's own queue.",
	}, []string{"namespace", "provider"})
)

func init() {
	metrics.Registry.MustRegister(eventsReceived, eventsDispatched, eventsFailed, eventsRateLimited, dispatchDuration, queueLength)
}
