package notifier

import (
	"context"
	"errors"
	"net/http"

	"plumb.dev/pkg/events"
)

// WebexMessagesURL is Webex's create-a-message endpoint.
const WebexMessagesURL = "https://webexapis.com/v1/messages"

// webexLimit is the bound of a message's markdown, in bytes.
const webexLimit = 7439

func webexKind(cfg Config) (Notifier, error) {
	if cfg.Token == "" {
		return nil, errors.New(`a webex provider needs the bot's access token in the key "token" of spec.secretRef`)
	}
	if cfg.Channel == "" {
		return nil, errors.New("a webex provider needs spec.channel, the roomId of the space to post in")
	}
	return &webex{cfg: cfg}, nil
}

// webex posts a Markdown message to a space as a bot.
type webex struct{ cfg Config }

type webexMessage struct {
	RoomID   string `json:"roomId"`
	Markdown string `json:"markdown"`
}

func (n *webex) Post(ctx context.Context, e events.Event) error {
	msg := webexMessage{
		RoomID:   n.cfg.Channel,
		Markdown: markdownText.render(alertLines(withoutUserInfo(e)), webexLimit),
	}
	a, err := n.cfg.do(ctx, request{
		method: http.MethodPost, url: n.cfg.Address, payload: msg,
		contentType: "application/json",
		header:      bearerAuth(n.cfg.Token),
	})
	if err != nil {
		return err
	}
	// 400 (bad roomId or body), 401, 403 (not in the space), 404 are
	// permanent; 429 (with Retry-After) and 5xx retried.
	return httpError(n.cfg.Type, a)
}
