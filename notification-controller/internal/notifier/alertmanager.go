package notifier

import (
	"context"
	"net/http"
	"strings"
	"time"

	"plumb.dev/pkg/events"
)

// alertmanagerAlert is one alert of Alertmanager's POST /api/v2/alerts
// (its postableAlert): labels identify the alert, annotations describe it.
type alertmanagerAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    string            `json:"startsAt,omitempty"`
}

// alertmanagerNotifier posts every event as a firing alert to the address,
// Alertmanager's /api/v2/alerts URL. Alertmanager resolves it after its
// resolve_timeout: an event says nothing of how long its news holds.
type alertmanagerNotifier struct{ cfg Config }

func newAlertmanager(cfg Config) (Notifier, error) { return &alertmanagerNotifier{cfg: cfg}, nil }

func (n *alertmanagerNotifier) Post(ctx context.Context, e events.Event) error {
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: n.cfg.Address, header: bearerOrBasic(n.cfg),
		payload: []alertmanagerAlert{alertmanagerAlertOf(withoutUserInfo(e))},
	})
}

// alertmanagerAlertOf labels the alert with what identifies the news (the
// object, the reason, the severity, and the Alert's metadata, e.g. a
// cluster name to route on) and annotates it with what describes it.
// Volatile metadata differs between repeats of one news, so it is an
// annotation: as a label it would make each repeat a new alert.
func alertmanagerAlertOf(e events.Event) alertmanagerAlert {
	labels, annotations := map[string]string{}, map[string]string{}
	for k, v := range e.Metadata {
		switch {
		case k == SummaryKey:
			annotations["summary"] = v
		case strings.HasPrefix(k, events.VolatilePrefix):
			annotations[labelName(k)] = v
		default:
			labels[labelName(k)] = v
		}
	}
	// Set after the metadata, which cannot override them.
	o := e.InvolvedObject
	for k, v := range map[string]string{
		"alertname":           "Plumb" + o.Kind + e.Reason,
		"severity":            string(e.Severity),
		"reason":              e.Reason,
		"kind":                o.Kind,
		"name":                o.Name,
		"namespace":           o.Namespace,
		"reportingcontroller": e.ReportingController,
	} {
		labels[k] = v
	}
	annotations["message"] = e.Message
	annotations["revision"] = e.Revision
	annotations["drift"] = driftText(e.Changes)
	// An empty label is no label to Alertmanager; leave them out.
	for _, m := range []map[string]string{labels, annotations} {
		for k, v := range m {
			if v == "" {
				delete(m, k)
			}
		}
	}
	a := alertmanagerAlert{Labels: labels, Annotations: annotations}
	if !e.Timestamp.IsZero() {
		a.StartsAt = e.Timestamp.UTC().Format(time.RFC3339)
	}
	return a
}

// labelName makes a metadata key a Prometheus label name
// ([a-zA-Z_][a-zA-Z0-9_]*), which Alertmanager requires of labels and
// annotations alike: other characters become '_'.
func labelName(k string) string {
	b := []byte(k)
	for i, c := range b {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
