package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Notification holds notification-controller's own options: the webhook
// receiver server, the JetStream consumer and alert delivery.
type Notification struct {
	// ReceiverAddr is where the webhook receiver listens.
	ReceiverAddr string
	// RateLimitInterval is how long an identical event is not sent again
	// to the same provider.
	RateLimitInterval time.Duration
	// ConsumerName is the durable JetStream consumer's name.
	ConsumerName string
	// AckWait is how long JetStream waits for an acknowledgement before
	// redelivering; the controller extends it while a delivery is retried.
	AckWait time.Duration
	// Retries is how many times a failed delivery is tried again.
	Retries int
	// RetryBackoff is the wait before the first retry; it doubles up to
	// MaxRetryBackoff.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// Workers is how many events are delivered at the same time; events
	// about one object always go through the same worker, in order.
	Workers int
}

// BindFlags registers the flags on fs.
func (o *Notification) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ReceiverAddr, "receiver-addr", ":9292",
		"The address the webhook receiver (POST /hook/<id>) binds to.")
	fs.DurationVar(&o.RateLimitInterval, "rate-limit-interval", 5*time.Minute,
		"Identical events within this interval are sent to a provider once.")
	fs.StringVar(&o.ConsumerName, "nats-consumer", "notification-controller",
		"The durable JetStream consumer that reads the events stream.")
	fs.DurationVar(&o.AckWait, "nats-ack-wait", time.Minute,
		"How long JetStream waits for an event's acknowledgement before delivering it again.")
	fs.IntVar(&o.Retries, "delivery-retries", 4,
		"How many times a failed alert delivery is retried before giving up.")
	fs.DurationVar(&o.RetryBackoff, "delivery-retry-backoff", 2*time.Second,
		"The wait before the first retry of a failed delivery; it doubles with each retry.")
	fs.DurationVar(&o.MaxRetryBackoff, "delivery-max-retry-backoff", 30*time.Second,
		"The longest wait between two retries of a delivery.")
	fs.IntVar(&o.Workers, "delivery-workers", 4,
		"How many events are delivered at the same time (events about one object stay in order).")
}

// Validate reports option values that cannot work.
func (o *Notification) Validate() error {
	switch {
	case o.ConsumerName == "":
		return fmt.Errorf("--nats-consumer must not be empty")
	case o.AckWait < time.Second:
		return fmt.Errorf("--nats-ack-wait must be at least 1s, got %s", o.AckWait)
	case o.Retries < 0:
		return fmt.Errorf("--delivery-retries must not be negative, got %d", o.Retries)
	case o.Workers < 1:
		return fmt.Errorf("--delivery-workers must be at least 1, got %d", o.Workers)
	case o.RateLimitInterval < 0:
		return fmt.Errorf("--rate-limit-interval must not be negative, got %s", o.RateLimitInterval)
	}
	return nil
}
