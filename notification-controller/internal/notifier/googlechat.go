package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"

	"plumb.dev/pkg/events"
)

// googleChatLimit bounds the card's text, inside the 32,000 bytes of a
// Google Chat message.
const googleChatLimit = 16000

func googleChatKind(cfg Config) (Notifier, error) {
	u, err := url.Parse(cfg.Address)
	if err != nil || u.RawQuery == "" {
		// A space's webhook URL carries its key and token in the query.
		return nil, errors.New(`a googlechat provider needs the space's webhook URL, with its key and token, in the key "address" of spec.secretRef`)
	}
	return &googleChat{cfg: cfg}, nil
}

// googleChat posts a card to a Google Chat space through its incoming
// webhook; with spec.threadPerObject, the messages about one object go to
// one thread (threadKey), which Google Chat keeps, restarts or not.
type googleChat struct{ cfg Config }

type googleChatMessage struct {
	Text    string           `json:"text"`
	CardsV2 []googleChatCard `json:"cardsV2"`
}

type googleChatCard struct {
	CardID string             `json:"cardId"`
	Card   googleChatCardBody `json:"card"`
}

type googleChatCardBody struct {
	Header   googleChatHeader    `json:"header"`
	Sections []googleChatSection `json:"sections"`
}

type googleChatHeader struct {
	Title    string `json:"title"`
	Subtitle string `json:"subtitle,omitempty"`
}

type googleChatSection struct {
	Widgets []googleChatWidget `json:"widgets"`
}

type googleChatWidget struct {
	TextParagraph *googleChatText `json:"textParagraph,omitempty"`
}

type googleChatText struct {
	Text string `json:"text"`
}

func (n *googleChat) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	lines := alertLines(e)
	// The text is the notification's preview; the card shows the rest
	// of the lines, in the card's HTML subset.
	msg := googleChatMessage{
		Text: plainText.render(lines[:1], 400),
		CardsV2: []googleChatCard{{
			CardID: "plumb-alert",
			Card: googleChatCardBody{
				Header: googleChatHeader{Title: objectTitle(e), Subtitle: e.ReportingController},
				Sections: []googleChatSection{{Widgets: []googleChatWidget{
					{TextParagraph: &googleChatText{Text: htmlText.render(lines, googleChatLimit)}},
				}}},
			},
		}},
	}
	address := n.cfg.Address
	if n.cfg.ThreadPerObject {
		u, _ := url.Parse(address)
		q := u.Query()
		sum := sha256.Sum256([]byte(objectTitle(e)))
		q.Set("threadKey", "plumb-"+hex.EncodeToString(sum[:12]))
		q.Set("messageReplyOption", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
		u.RawQuery = q.Encode()
		address = u.String()
	}
	a, err := n.cfg.do(ctx, request{method: http.MethodPost, url: address, payload: msg, contentType: "application/json; charset=UTF-8"})
	if err != nil {
		return err
	}
	// 400 INVALID_ARGUMENT, 403/404 for a bad key or token, 429
	// RESOURCE_EXHAUSTED; the status is the verdict.
	return httpError(n.cfg.Type, a)
}
