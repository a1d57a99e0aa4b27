package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/alerttext"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/panics"
)

// Delivering to providers: deliver takes one event for one Alert off its
// Provider's queue (queue.go) and sends it, with retries and backoff,
// within the Provider's timeout, once per event (delivered) and once per
// news within --rate-limit-interval (limiter, ratelimit.go); a provider
// that gives up is a Warning event on the Alert.

// deliver sends the event to the alert's provider, retrying with backoff.
// It returns false only when ctx ended before the provider took the event
// or gave up. A panic is reported, on the Alert too, and counts as given up.
func (d *Dispatcher) deliver(ctx context.Context, alert *notificationv1.Alert, e *events.Event) (done bool) {
	var panicked error
	defer func() {
		if panicked != nil {
			d.giveUp(alert, e, errors.New("delivery failed on an internal error (a panic, reported in notification-controller's log)"))
			done = true
		}
	}()
	defer panics.Recover(&panicked, "alert delivery")
	log := d.Log.WithValues("alert", alert.Namespace+"/"+alert.Name, "provider", alert.Spec.ProviderRef.Name, "event", e.ID)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	provider, err := d.configs.provider(rctx, alert)
	if err != nil {
		d.giveUp(alert, e, fmt.Errorf("provider %s: %w", alert.Spec.ProviderRef.Name, err))
		return true
	}
	if provider.Spec.Suspend {
		return true
	}
	payload, err := withAlert(e, alert)
	if err != nil {
		log.Error(err, "an alert template failed on this event; sending the untemplated text")
	}
	key := string(provider.UID) + "/" + events.Fingerprint(&payload)
	labels := []string{provider.Namespace, provider.Name, provider.Spec.Type}
	// The same event again, not only the same news: JetStream delivers an
	// event again when its acknowledgement was lost (a NATS server lost
	// in between), and the provider took it already. Checked whatever
	// --rate-limit-interval says, which may be zero.
	once := alert.Namespace + "/" + alert.Name + "/" + string(provider.UID) + "/" + e.ID
	if d.delivered.Seen(once) {
		log.Info("event delivered to this provider already, not sent again: JetStream delivered it again after a lost acknowledgement")
		return true
	}
	if d.limiter.Seen(key) {
		d.Metrics.delivered("rateLimited", labels...)
		return true
	}

	// --delivery-retry-backoff, doubling up to --delivery-max-retry-backoff;
	// Until returns an error only when ctx ends while it waits.
	retry := wait.Backoff{Duration: d.Options.RetryBackoff, Factor: 2, Cap: d.Options.MaxRetryBackoff, Steps: math.MaxInt32}
	attempt := 0
	return retry.DelayFunc().Until(ctx, true, true, func(context.Context) (bool, error) {
		attempt++
		err := d.attempt(notifier.WithAlert(ctx, alert), provider, payload)
		if err == nil {
			d.Metrics.delivered("dispatched", labels...)
			d.limiter.Mark(key)
			d.delivered.Mark(once)
			return true, nil
		}
		var skipped *notifier.Skipped
		if errors.As(err, &skipped) {
			// The provider has nothing to do with this event (a commit
			// status without a commit): handled, not failed.
			log.Info("event not sent to the provider, which has nothing to do with it", "object",
				e.InvolvedObject.Kind+"/"+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "why", skipped.Why)
			return true, nil
		}
		if notifier.IsPermanent(err) || attempt > d.Options.Retries {
			d.Metrics.delivered("failed", labels...)
			d.giveUp(alert, e, fmt.Errorf("after %d attempts: %w", attempt, err))
			return true, nil
		}
		log.V(1).Info("delivery failed, retrying", "attempt", attempt, "error", err.Error())
		return false, nil
	}) == nil
}

// deliveredWindow is how long the dispatcher remembers that an event was
// delivered: ten ack waits (ten minutes by default), well past the ack
// wait after which JetStream delivers again an event whose
// acknowledgement was lost, even when the acknowledgement was retried for
// a whole ack wait first (settle).
func deliveredWindow(ackWait time.Duration) time.Duration { return 10 * ackWait }

// Timeout is how long one delivery attempt through p may take: its
// spec.timeout, cut to max.
func Timeout(p *notificationv1.Provider, max time.Duration) time.Duration {
	t := p.GetTimeout().Duration
	if max > 0 && (t <= 0 || t > max) {
		return max
	}
	return t
}

// attempt makes one delivery, Secret read included, within the provider's
// timeout (at most --max-provider-timeout). It runs to that timeout even
// when shutdown begins, so a request in flight is not cut off halfway.
func (d *Dispatcher) attempt(ctx context.Context, provider *notificationv1.Provider, payload events.Event) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout(provider, d.Options.MaxProviderTimeout))
	defer cancel()
	n, err := d.configs.notifier(actx, provider)
	if err != nil {
		return err
	}
	start := time.Now()
	err = n.Post(actx, payload)
	d.Metrics.attempt(provider.Spec.Type, start)
	if err != nil && !notifier.IsSkipped(err) {
		d.configs.forget(provider)
	}
	return err
}

// giveUp records that a provider did not take an event.
func (d *Dispatcher) giveUp(alert *notificationv1.Alert, e *events.Event, err error) {
	d.Log.Info("giving up delivering an event", "alert", alert.Namespace+"/"+alert.Name, "event", e.ID, "error", err.Error())
	if d.Events != nil {
		d.Events.Eventf(alert, events.SeverityError, notificationv1.DeliveryFailedReason,
			"event %s about %s %s/%s not delivered to provider %s: %v",
			e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, alert.Spec.ProviderRef.Name, err)
	}
}

// withAlert returns the event as the alert sends it: with the metadata
// of sentMetadata, its summary and, with a message template, its message,
// both rendered over the event (alerttext). When a template fails it
// returns the error too, and the event with the untemplated text (the
// event's message, spec.summary as written): an event is never dropped
// for its Alert's template.
func withAlert(e *events.Event, alert *notificationv1.Alert) (events.Event, error) {
	out := *e
	out.Metadata = sentMetadata(e.Metadata, alert.Spec.EventMetadata)
	if alert.Spec.Summary == "" && alert.Spec.MessageTemplate == "" {
		return out, nil
	}
	text := alerttext.Rendered{Summary: alert.Spec.Summary, Message: e.Message}
	tmpl, err := alerttext.Parse(alert)
	if err == nil {
		// Templates see the metadata the alert sends, without the summary.
		text, err = tmpl.Render(&out)
	}
	out.Message = text.Message
	if text.Summary != "" {
		if _, own := e.Metadata[notifier.SummaryKey]; !own {
			meta := maps.Clone(out.Metadata)
			if meta == nil {
				meta = map[string]string{}
			}
			meta[notifier.SummaryKey] = text.Summary
			out.Metadata = meta
		}
	}
	return out, err
}

// sentMetadata is the metadata an alert sends, from the lowest precedence
// to the highest, as Flux orders them: the object's annotations
// (events.AnnotationPrefix, sent without the prefix), the Alert's
// eventMetadata, then the controller's own keys, so neither an Alert nor
// an annotation can misreport what a controller said.
func sentMetadata(own, alert map[string]string) map[string]string {
	annotated := false
	for k := range own {
		annotated = annotated || strings.HasPrefix(k, events.AnnotationPrefix)
	}
	if len(alert) == 0 && !annotated {
		return own
	}
	meta := make(map[string]string, len(own)+len(alert)+1)
	for k, v := range own {
		if key, ok := strings.CutPrefix(k, events.AnnotationPrefix); ok {
			meta[key] = v
		}
	}
	maps.Copy(meta, alert)
	for k, v := range own {
		if !strings.HasPrefix(k, events.AnnotationPrefix) {
			meta[k] = v
		}
	}
	return meta
}
