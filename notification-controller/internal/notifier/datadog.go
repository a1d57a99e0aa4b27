package notifier

import (
	"context"
	"net/http"
	"strings"
	"time"

	"plumb.dev/pkg/events"
)

// Datadog Events API (v1) limits, in characters, and how far back
// date_happened may go.
const (
	datadogTitleMax = 100
	datadogTextMax  = 4000
	datadogKeyMax   = 100 // aggregation_key
	datadogTagMax   = 200
	datadogPastMax  = 18 * time.Hour
)

// datadogEvent is the body of POST /api/v1/events.
type datadogEvent struct {
	Title          string   `json:"title"`
	Text           string   `json:"text"`
	AlertType      string   `json:"alert_type"`
	AggregationKey string   `json:"aggregation_key,omitempty"`
	DateHappened   int64    `json:"date_happened,omitempty"`
	Tags           []string `json:"tags,omitempty"`
}

// datadogNotifier posts every event to the Events API of the address's
// site (https://api.datadoghq.com by default; https://api.datadoghq.eu,
// https://api.us5.datadoghq.com, ...) with the API key in DD-API-KEY.
// Events of one object share an aggregation key, so Datadog rolls them up.
type datadogNotifier struct{ cfg Config }

func newDatadog(cfg Config) (Notifier, error) {
	if cfg.Token == "" {
		return nil, errNoToken(cfg.Type, datadogToken)
	}
	return &datadogNotifier{cfg: cfg}, nil
}

func (n *datadogNotifier) Post(ctx context.Context, e events.Event) error {
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: joinPath(n.cfg.Address, "/api/v1/events"), payload: datadogEventOf(withoutUserInfo(e), time.Now()),
		header: http.Header{"DD-API-KEY": {n.cfg.Token}},
	})
}

// datadogEventOf is an error, success (a recovery, outcomeOf) or info
// event, tagged with the object the way Datadog's Kubernetes integration
// tags (kube_kind, kube_name, kube_namespace; tags are lower case).
func datadogEventOf(e events.Event, now time.Time) datadogEvent {
	alertType := map[outcome]string{failure: "error", recovery: "success", progress: "info"}[outcomeOf(e)]
	text := []string{e.Message}
	for _, f := range facts(e) {
		text = append(text, f.Title+": "+f.Value)
	}
	o := e.InvolvedObject
	tags := []string{"kube_kind:" + o.Kind, "kube_name:" + o.Name, "kube_namespace:" + o.Namespace,
		"plumb_reason:" + e.Reason, "plumb_reporting_controller:" + e.ReportingController}
	for _, k := range stableMetadataKeys(e) {
		tags = append(tags, k+":"+e.Metadata[k])
	}
	var kept []string
	for _, t := range tags {
		if !strings.HasSuffix(t, ":") {
			kept = append(kept, clipRunes(strings.ToLower(t), datadogTagMax))
		}
	}
	ev := datadogEvent{
		Title:          clipRunes(objectTitle(e)+": "+e.Reason, datadogTitleMax),
		Text:           clipRunes(strings.Join(text, "\n"), datadogTextMax),
		AlertType:      alertType,
		AggregationKey: incidentKey(e, datadogKeyMax),
		Tags:           kept,
	}
	// Datadog refuses a date_happened older than 18 hours; an older event
	// (a delivery retried that long) is dated when it arrives.
	if !e.Timestamp.IsZero() && now.Sub(e.Timestamp) < datadogPastMax {
		ev.DateHappened = e.Timestamp.Unix()
	}
	return ev
}
