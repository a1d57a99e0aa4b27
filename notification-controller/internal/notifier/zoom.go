package notifier

import (
	"context"
	"net/http"
	"net/url"

	"plumb.dev/pkg/events"
)

// zoomLimit bounds the message's text: Zoom Team Chat takes 4096
// characters in a message.
const zoomLimit = 4000

// zoomTokenNeed is what a zoom Provider's token is.
const zoomTokenNeed = "the verification token of a Zoom Incoming Webhook connection"

func zoomKind(cfg Config) (Notifier, error) { return &zoom{cfg: cfg}, nil }

// zoom posts a rich message to a Zoom Team Chat Incoming Webhook (the
// chatbot's endpoint with ?format=full): the object as the head, the
// severity as the sub head, the message, and the alert's facts as
// key-value fields, as Flux's zoom provider does. The connection's
// verification token goes in the Authorization header as it is, with no
// scheme, which is what Zoom checks.
type zoom struct{ cfg Config }

type zoomMessage struct {
	Content zoomContent `json:"content"`
}

type zoomContent struct {
	Head zoomHead   `json:"head"`
	Body []zoomItem `json:"body"`
}

type zoomHead struct {
	Text    string    `json:"text"`
	SubHead *zoomText `json:"sub_head,omitempty"`
}

type zoomText struct {
	Text string `json:"text"`
}

type zoomItem struct {
	Type  string      `json:"type"`
	Text  string      `json:"text,omitempty"`
	Items []zoomField `json:"items,omitempty"`
}

type zoomField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (n *zoom) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	msg := zoomMessage{Content: zoomContent{
		Head: zoomHead{Text: objectTitle(e), SubHead: &zoomText{Text: string(e.Severity)}},
		Body: []zoomItem{{Type: "message", Text: clipRunes(e.Message, zoomLimit)}},
	}}
	if fs := facts(e); len(fs) > 0 {
		fields := make([]zoomField, len(fs))
		for i, f := range fs {
			fields[i] = zoomField{Key: f.Title, Value: clipRunes(f.Value, zoomLimit)}
		}
		msg.Content.Body = append(msg.Content.Body, zoomItem{Type: "fields", Items: fields})
	}
	return n.cfg.send(ctx, request{method: http.MethodPost, url: zoomURL(n.cfg.Address), payload: msg,
		header: http.Header{"Authorization": {n.cfg.Token}}})
}

// zoomURL asks for the rich message format unless the address already
// names a format.
func zoomURL(address string) string {
	u, err := url.Parse(address)
	if err != nil {
		return address // do reports it, without quoting it
	}
	q := u.Query()
	if q.Get("format") == "" {
		q.Set("format", "full")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
