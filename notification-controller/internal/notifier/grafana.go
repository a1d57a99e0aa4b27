package notifier

import (
	"context"
	"net/http"
	"strings"

	"plumb.dev/pkg/events"
)

// grafanaTagMax bounds a tag: Grafana stores a tag's key and value in
// columns of 100 characters.
const grafanaTagMax = 100

// grafanaAnnotation is the body of Grafana's POST /api/annotations: with
// no dashboard, an organization-wide annotation that any dashboard can
// show by its tags.
type grafanaAnnotation struct {
	Time int64    `json:"time,omitempty"` // epoch milliseconds
	Tags []string `json:"tags"`
	Text string   `json:"text"`
}

// grafanaNotifier annotates Grafana with every event, at the event's time,
// so dashboards show deployments and failures beside the metrics. The
// address is the /api/annotations URL; a token is a service account token
// (bearer), or the Secret's username and password authenticate.
type grafanaNotifier struct{ cfg Config }

func newGrafana(cfg Config) (Notifier, error) { return &grafanaNotifier{cfg: cfg}, nil }

func (n *grafanaNotifier) Post(ctx context.Context, e events.Event) error {
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: n.cfg.Address, header: bearerOrBasic(n.cfg),
		payload: grafanaAnnotationOf(withoutUserInfo(e)),
	})
}

// grafanaAnnotationOf tags the annotation "key: value" (Grafana's tag
// pairs) with the object, severity, reason and the Alert's metadata, as
// Flux does, so a dashboard filters one object's or one cluster's events.
func grafanaAnnotationOf(e events.Event) grafanaAnnotation {
	o := e.InvolvedObject
	tags := []string{"plumb"}
	if e.ReportingController != "" {
		tags = append(tags, e.ReportingController)
	}
	pairs := [][2]string{{"kind", o.Kind}, {"name", o.Name}, {"namespace", o.Namespace}, {"severity", string(e.Severity)}, {"reason", e.Reason}}
	for _, k := range stableMetadataKeys(e) {
		pairs = append(pairs, [2]string{k, e.Metadata[k]})
	}
	for _, p := range pairs {
		if p[1] != "" {
			tags = append(tags, clipRunes(p[0]+": "+p[1], grafanaTagMax))
		}
	}
	text := []string{objectTitle(e) + ": " + e.Reason, e.Message}
	for _, f := range facts(e) {
		text = append(text, f.Title+": "+f.Value)
	}
	a := grafanaAnnotation{Tags: tags, Text: strings.Join(text, "\n")}
	if !e.Timestamp.IsZero() {
		a.Time = e.Timestamp.UnixMilli()
	}
	return a
}
