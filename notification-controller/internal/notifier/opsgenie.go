package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"plumb.dev/pkg/events"
)

// Opsgenie Alert API limits, in characters.
const (
	opsgenieMessageMax     = 130
	opsgenieAliasMax       = 512
	opsgenieDescriptionMax = 15000
	opsgenieDetailsMax     = 8000 // keys and values together
	opsgenieTagMax         = 50
)

// opsgenieAlert is the body of POST /v2/alerts.
type opsgenieAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source,omitempty"`
}

// opsgenieClose is the body of POST /v2/alerts/{alias}/close.
type opsgenieClose struct {
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
}

// opsgenieNotifier creates an alert per object on an error event, with the
// object's incidentKey as alias, so Opsgenie counts repeats on the open
// alert; the object's next success closes it. Progress events are not
// sent. The address is the Alert API's /v2/alerts URL (the EU instance's
// is https://api.eu.opsgenie.com/v2/alerts).
type opsgenieNotifier struct{ cfg Config }

func newOpsgenie(cfg Config) (Notifier, error) {
	if cfg.Token == "" {
		return nil, errNoToken(cfg.Type, opsgenieToken)
	}
	return &opsgenieNotifier{cfg: cfg}, nil
}

func (n *opsgenieNotifier) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	alias := incidentKey(e, opsgenieAliasMax)
	var target string
	var payload any
	switch outcomeOf(e) {
	case progress:
		return nil
	case recovery:
		target = strings.TrimSuffix(n.cfg.Address, "/") + "/" + url.PathEscape(alias) + "/close?identifierType=alias"
		payload = opsgenieClose{Source: e.ReportingController, Note: clipRunes(e.Reason+": "+e.Message, opsgenieDescriptionMax)}
	case failure:
		target = n.cfg.Address
		payload = opsgenieAlertOf(e, alias)
	}
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: target, payload: payload,
		header: http.Header{"Authorization": {"GenieKey " + n.cfg.Token}},
	})
}

func opsgenieAlertOf(e events.Event, alias string) opsgenieAlert {
	a := opsgenieAlert{
		Message:     clipRunes(objectTitle(e)+": "+e.Reason, opsgenieMessageMax),
		Alias:       alias,
		Description: clipRunes(e.Message, opsgenieDescriptionMax),
		Entity:      clipRunes(objectTitle(e), opsgenieAliasMax),
		Source:      clipRunes(e.ReportingController, 100),
		Details:     map[string]string{},
	}
	for _, t := range []string{"plumb", strings.ToLower(e.InvolvedObject.Kind), string(e.Severity), e.Reason} {
		if t != "" {
			a.Tags = append(a.Tags, clipRunes(t, opsgenieTagMax))
		}
	}
	// Details share one budget: what does not fit is left out, the
	// description above holds the message.
	budget := opsgenieDetailsMax
	for _, f := range append([]fact{{"severity", string(e.Severity)}}, facts(e)...) {
		v := clipRunes(f.Value, 1000)
		if cost := len([]rune(f.Title)) + len([]rune(v)); cost <= budget {
			a.Details[f.Title] = v
			budget -= cost
		}
	}
	return a
}
