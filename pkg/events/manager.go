package events

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"plumb.dev/pkg/options"
)

// closeTimeout bounds how long a controller's exit waits for the events
// still queued to be sent.
const closeTimeout = 10 * time.Second

// NewManagerRecorder is a controller's event wiring, from its NATS flags
// (options.NATS): the publisher (NewPublisher, nothing published when the
// URL is empty), its readiness check "nats" on mgr — not ready while the
// NATS server refuses the controller (credentials, permissions or TLS); a
// controller that only cannot reach NATS stays ready and queues its events
// — and the Recorder the reconcilers emit with, to the Kubernetes API and
// the stream, in the manager's scheme. The caller defers the returned
// close until the manager has stopped: it sends what is still queued,
// waiting at most ten seconds.
func NewManagerRecorder(mgr manager.Manager, opts options.NATS, controller string, log logr.Logger) (*Recorder, func(), error) {
	publisher, err := NewPublisher(opts, controller, log)
	if err != nil {
		return nil, nil, err
	}
	closePublisher := func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := publisher.Close(ctx); err != nil {
			log.Error(err, "closing the event publisher")
		}
	}
	if err := mgr.AddReadyzCheck("nats", publisher.Check); err != nil {
		closePublisher()
		return nil, nil, err
	}
	return NewRecorder(mgr.GetEventRecorder(controller), publisher, mgr.GetScheme(), controller), closePublisher, nil
}
