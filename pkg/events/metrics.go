package events

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The publisher's metrics, registered with controller-runtime's registry so
// every controller serves them on /metrics.
var (
	eventsPublished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_events_published_total",
		Help: "Events stored in the JetStream stream, by publishing controller.",
	}, []string{"controller"})
	eventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_events_dropped_total",
		Help: "Events dropped because the in-memory queue was full while NATS was unreachable, or left unsent at shutdown.",
	}, []string{"controller"})
	queueLength = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "plumb_events_queue_length",
		Help: "Events waiting in memory to be stored in the stream.",
	}, []string{"controller"})
)

func init() {
	metrics.Registry.MustRegister(eventsPublished, eventsDropped, queueLength)
}
