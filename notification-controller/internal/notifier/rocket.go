package notifier

import (
	"context"
	"net/http"

	"plumb.dev/pkg/events"
)

// rocketLimit bounds the attachment's text (Rocket.Chat's default
// Message_MaxAllowedSize is 5000 characters).
const rocketLimit = 5000

func rocketKind(cfg Config) (Notifier, error) { return &rocket{cfg: cfg}, nil }

// rocket posts to a Rocket.Chat incoming webhook (its URL holds the
// integration's token) a message with one coloured attachment.
type rocket struct{ cfg Config }

type rocketMessage struct {
	Text        string             `json:"text"`
	Username    string             `json:"username,omitempty"`
	Channel     string             `json:"channel,omitempty"`
	Attachments []rocketAttachment `json:"attachments"`
}

type rocketAttachment struct {
	Title      string        `json:"title"`
	Text       string        `json:"text"`
	Color      string        `json:"color"`
	AuthorName string        `json:"author_name,omitempty"`
	Fields     []rocketField `json:"fields,omitempty"`
}

type rocketField struct {
	Short bool   `json:"short"`
	Title string `json:"title"`
	Value string `json:"value"`
}

func (n *rocket) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	color := "#2eb886"
	if e.Severity == events.SeverityError {
		color = "#a30200"
	}
	att := rocketAttachment{
		Title:      e.Reason,
		Text:       plainText.render([]line{{text: e.Message}}, rocketLimit),
		Color:      color,
		AuthorName: e.ReportingController,
	}
	for _, f := range facts(e) {
		att.Fields = append(att.Fields, rocketField{Short: len(f.Value) < 40 && f.Title != "Drift", Title: f.Title, Value: f.Value})
	}
	msg := rocketMessage{
		Text:        heading(e),
		Username:    n.cfg.Username,
		Channel:     n.cfg.Channel,
		Attachments: []rocketAttachment{att},
	}
	a, err := n.cfg.do(ctx, request{method: http.MethodPost, url: n.cfg.Address, payload: msg, contentType: "application/json"})
	if err != nil {
		return err
	}
	return confirmed(n.cfg.Type, a, "success")
}
