package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"plumb.dev/pkg/events"
)

// PagerDuty Events API v2 limits.
const (
	pagerDutySummaryMax  = 1024
	pagerDutyDedupKeyMax = 255
	pagerDutyRoutingKey  = 32 // an integration key's length
)

// pagerDutyEvent is an alert event of the Events API v2 (POST
// /v2/enqueue). A resolve carries only routing_key, event_action and
// dedup_key.
type pagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"`
	Client      string            `json:"client,omitempty"`
}

// pagerDutyPayload describes a triggered incident.
type pagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// pagerDutyNotifier opens an incident per object on its first error event
// and resolves it on the object's next success (outcomeOf): both carry
// the object's incidentKey as dedup_key, so repeated failures add to one
// incident and the recovery closes that one. Progress events are not sent.
type pagerDutyNotifier struct{ cfg Config }

func newPagerDuty(cfg Config) (Notifier, error) {
	if cfg.Channel == "" {
		return nil, errors.New("a pagerduty provider needs spec.channel: the routing key of a PagerDuty Events API v2 integration")
	}
	if !isAlphanumeric(cfg.Channel, pagerDutyRoutingKey) {
		return nil, fmt.Errorf("a pagerduty provider's spec.channel must be an Events API v2 routing key, %d letters and digits", pagerDutyRoutingKey)
	}
	return &pagerDutyNotifier{cfg: cfg}, nil
}

func (n *pagerDutyNotifier) Post(ctx context.Context, e events.Event) error {
	ev := pagerDutyEvent{RoutingKey: n.cfg.Channel, DedupKey: incidentKey(e, pagerDutyDedupKeyMax)}
	switch outcomeOf(e) {
	case progress:
		return nil
	case recovery:
		ev.EventAction = "resolve"
	case failure:
		ev.EventAction = "trigger"
		ev.Client = "Plumb"
		ev.Payload = pagerDutyPayloadOf(withoutUserInfo(e))
	}
	return n.cfg.send(ctx, request{method: http.MethodPost, url: joinPath(n.cfg.Address, "/v2/enqueue"), payload: ev})
}

func pagerDutyPayloadOf(e events.Event) *pagerDutyPayload {
	p := &pagerDutyPayload{
		Summary:   clipRunes(objectTitle(e)+": "+e.Reason+": "+e.Message, pagerDutySummaryMax),
		Source:    e.ReportingController,
		Severity:  "error",
		Component: e.InvolvedObject.Name,
		Group:     e.InvolvedObject.Kind,
		Class:     e.Reason,
	}
	if p.Source == "" {
		p.Source = "plumb" // required
	}
	if !e.Timestamp.IsZero() {
		p.Timestamp = e.Timestamp.UTC().Format(time.RFC3339)
	}
	details := map[string]any{}
	for _, f := range facts(e) {
		details[f.Title] = f.Value
	}
	details["message"] = e.Message
	p.CustomDetails = details
	return p
}

// isAlphanumeric reports whether s is n ASCII letters and digits.
func isAlphanumeric(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
