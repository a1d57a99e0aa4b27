package notifier

import (
	"context"
	"net/http"

	"plumb.dev/pkg/events"
)

// incidentioTokenNeed is what an incident.io Provider's token is.
const incidentioTokenNeed = "the API token of an incident.io HTTP alert source"

// incident.io's limits on an alert event.
const (
	incidentioTitleMax       = 1024
	incidentioDescriptionMax = 10000
	incidentioKeyMax         = 255
)

func newIncidentio(cfg Config) (Notifier, error) { return &incidentio{cfg: cfg}, nil }

// incidentio sends alert events to an incident.io HTTP alert source (the
// address is its endpoint, https://api.incident.io/v2/alert_events/http/<id>,
// the token a bearer token): a failure fires the object's alert, a
// success resolves it, progress sends nothing (outcomeOf). The
// deduplication key is the object's UID, as Flux's, so a recovery
// resolves what the failure fired and two clusters' objects of one name
// never share an alert; an event without a UID uses incidentKey.
type incidentio struct{ cfg Config }

type incidentioEvent struct {
	Title            string            `json:"title"`
	Status           string            `json:"status"`
	DeduplicationKey string            `json:"deduplication_key"`
	Description      string            `json:"description,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
}

func (n *incidentio) Post(ctx context.Context, e events.Event) error {
	ev := incidentioEvent{}
	switch outcomeOf(e) {
	case progress:
		return nil
	case recovery:
		ev.Status = "resolved"
	case failure:
		ev.Status = "firing"
	}
	e = withoutUserInfo(e)
	ev.Title = clipRunes(objectTitle(e)+": "+e.Reason, incidentioTitleMax)
	ev.Description = clipRunes(e.Message, incidentioDescriptionMax)
	ev.DeduplicationKey = e.InvolvedObject.UID
	if ev.DeduplicationKey == "" || len(ev.DeduplicationKey) > incidentioKeyMax {
		ev.DeduplicationKey = incidentKey(e, incidentioKeyMax)
	}
	ev.Metadata = map[string]string{"severity": string(e.Severity), "reason": e.Reason}
	for _, f := range facts(e) {
		ev.Metadata[f.Title] = f.Value
	}
	if e.ReportingController != "" {
		ev.Metadata["reportingController"] = e.ReportingController
	}
	return n.cfg.send(ctx, request{method: http.MethodPost, url: n.cfg.Address, payload: ev, header: bearerAuth(n.cfg.Token)})
}
