package config

import (
	"fmt"
	"strings"
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
	// Workers is how many events are matched against Alerts at the same
	// time; events about one object always go through the same worker, in
	// order. Delivery runs on one queue per Provider.
	Workers int
	// MaxProviderTimeout caps a Provider's spec.timeout.
	MaxProviderTimeout time.Duration
	// AllowPrivateAddresses lets deliveries reach private addresses
	// (RFC 1918, RFC 6598 shared space, IPv6 unique local).
	AllowPrivateAddresses bool
	// AllowLoopbackAddresses lets deliveries reach loopback addresses
	// (127.0.0.0/8, ::1): for tests and `make run` on one machine.
	AllowLoopbackAddresses bool

	// NoCrossNamespaceRefs refuses Receiver resources and Alert event
	// sources in another namespace than the object's; main sets it from
	// pkg/options.Reconcile's --no-cross-namespace-refs, the flag every
	// controller shares.
	NoCrossNamespaceRefs bool
	// SecretRefreshInterval is how often the Secret of a Provider or
	// Receiver is read again (notification-controller may not watch
	// Secrets).
	SecretRefreshInterval time.Duration

	// ReceiverRate is how many calls per second one Receiver takes, with
	// bursts of ReceiverBurst; more are answered 429.
	ReceiverRate  float64
	ReceiverBurst int
	// ReceiverMaxConcurrent is how many webhook calls are handled at the
	// same time, over all Receivers; more are answered 429.
	ReceiverMaxConcurrent int
	// ReceiverMaxShare is the part of ReceiverMaxConcurrent one Receiver,
	// or one namespace's Receivers, may hold; ReceiverBodyTimeout bounds
	// the arrival of a call's body.
	ReceiverMaxShare    float64
	ReceiverBodyTimeout time.Duration
	// GCRIssuer and GCRJWKSURL are the OpenID Connect issuer whose ID
	// tokens gcr Receivers accept (Pub/Sub push authentication) and where
	// its signing keys are published: Google's, unless a cluster without
	// internet access stands in for it.
	GCRIssuer  string
	GCRJWKSURL string
}

// BindFlags registers the flags on fs.
func (o *Notification) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ReceiverAddr, "receiver-addr", ":9292",
		"The address the webhook receiver (POST /hook/<id>) binds to; fd:N serves on the listening socket inherited as file descriptor N.")
	fs.DurationVar(&o.RateLimitInterval, "rate-limit-interval", 5*time.Minute,
		"Identical events within this interval are sent to a provider once.")
	fs.StringVar(&o.ConsumerName, "nats-consumer", "notification-controller",
		"The durable JetStream consumer that reads the events stream; left unset with --watch-label-selector, the shard's own (the name with a hash of the selector), so every shard reads every event.")
	fs.DurationVar(&o.AckWait, "nats-ack-wait", time.Minute,
		"How long JetStream waits for an event's acknowledgement before delivering it again.")
	fs.IntVar(&o.Retries, "delivery-retries", 4,
		"How many times a failed alert delivery is retried before giving up.")
	fs.DurationVar(&o.RetryBackoff, "delivery-retry-backoff", 2*time.Second,
		"The wait before the first retry of a failed delivery; it doubles with each retry.")
	fs.DurationVar(&o.MaxRetryBackoff, "delivery-max-retry-backoff", 30*time.Second,
		"The longest wait between two retries of a delivery.")
	fs.IntVar(&o.Workers, "delivery-workers", 4,
		"How many events are matched against Alerts at the same time (events about one object stay in order); each Provider has its own delivery queue.")
	fs.DurationVar(&o.MaxProviderTimeout, "max-provider-timeout", 30*time.Second,
		"The longest a delivery attempt may take; a Provider's longer spec.timeout is cut to it.")
	fs.BoolVar(&o.AllowPrivateAddresses, "allow-private-provider-addresses", true,
		"Let alerts, and generic-oidc Receivers' issuer discovery, reach private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), such as in-cluster Services. Link-local and cloud metadata addresses are always refused.")
	fs.BoolVar(&o.AllowLoopbackAddresses, "allow-loopback-provider-addresses", false,
		"Let alerts, and generic-oidc Receivers' issuer discovery, reach loopback addresses (127/8, ::1); for tests and local runs only.")
	fs.DurationVar(&o.SecretRefreshInterval, "secret-refresh-interval", time.Minute,
		"How often the Secret of a Provider or Receiver is read again; a rotated token takes effect within it.")
	fs.Float64Var(&o.ReceiverRate, "receiver-rate-limit", 1,
		"Webhook calls per second one Receiver takes on average; more are answered 429.")
	fs.IntVar(&o.ReceiverBurst, "receiver-burst", 20,
		"Webhook calls one Receiver takes at once before --receiver-rate-limit applies.")
	fs.IntVar(&o.ReceiverMaxConcurrent, "receiver-max-concurrent", 16,
		"Webhook calls handled at the same time over all Receivers; more are answered 429.")
	fs.Float64Var(&o.ReceiverMaxShare, "receiver-max-share", 0.25,
		"The part of --receiver-max-concurrent that one Receiver, or all the Receivers of one namespace, may hold at once (at least one call); more of theirs are answered 429.")
	fs.DurationVar(&o.ReceiverBodyTimeout, "receiver-body-timeout", 5*time.Second,
		"How long a webhook call's body may take to arrive once its headers have; a slower one is answered 408 and frees its slot.")
	fs.StringVar(&o.GCRIssuer, "gcr-oidc-issuer", "https://accounts.google.com",
		"The issuer (iss) of the ID tokens gcr Receivers accept from Pub/Sub push subscriptions.")
	fs.StringVar(&o.GCRJWKSURL, "gcr-jwks-url", "https://www.googleapis.com/oauth2/v3/certs",
		"Where the public keys of --gcr-oidc-issuer are fetched (a JSON Web Key Set, cached for an hour).")
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
	case o.MaxProviderTimeout < time.Second:
		return fmt.Errorf("--max-provider-timeout must be at least 1s, got %s", o.MaxProviderTimeout)
	case o.SecretRefreshInterval < time.Second:
		return fmt.Errorf("--secret-refresh-interval must be at least 1s, got %s", o.SecretRefreshInterval)
	case o.ReceiverRate <= 0 || o.ReceiverBurst < 1:
		return fmt.Errorf("--receiver-rate-limit must be positive and --receiver-burst at least 1, got %g and %d", o.ReceiverRate, o.ReceiverBurst)
	case o.ReceiverMaxConcurrent < 1:
		return fmt.Errorf("--receiver-max-concurrent must be at least 1, got %d", o.ReceiverMaxConcurrent)
	case o.ReceiverMaxShare <= 0 || o.ReceiverMaxShare > 1:
		return fmt.Errorf("--receiver-max-share must be above 0 and at most 1, got %g", o.ReceiverMaxShare)
	case o.ReceiverBodyTimeout <= 0:
		return fmt.Errorf("--receiver-body-timeout must be positive, got %s", o.ReceiverBodyTimeout)
	case o.GCRIssuer == "":
		return fmt.Errorf("--gcr-oidc-issuer must not be empty")
	case !strings.HasPrefix(o.GCRJWKSURL, "https://") && !strings.HasPrefix(o.GCRJWKSURL, "http://"):
		return fmt.Errorf("--gcr-jwks-url must be an http(s) URL, got %q", o.GCRJWKSURL)
	}
	return nil
}
