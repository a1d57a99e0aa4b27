package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"plumb.dev/pkg/events"
)

// larkLimit bounds the card's text, inside the 20 KB of a custom bot's
// request.
const larkLimit = 12000

// larkRetryable are the answer codes that may pass: 11232 is the custom
// bot's rate limit ("frequency limited").
var larkRetryable = map[int]bool{11232: true}

func larkKind(cfg Config) (Notifier, error) { return &lark{cfg: cfg}, nil }

// lark posts an interactive card to a Lark (Feishu) group through a
// custom bot's webhook, whose URL is its credential.
type lark struct{ cfg Config }

type larkMessage struct {
	MsgType string   `json:"msg_type"`
	Card    larkCard `json:"card"`
}

type larkCard struct {
	Config   larkConfig    `json:"config"`
	Header   larkHeader    `json:"header"`
	Elements []larkElement `json:"elements"`
}

type larkConfig struct {
	WideScreenMode bool `json:"wide_screen_mode"`
}

type larkHeader struct {
	Title    larkText `json:"title"`
	Template string   `json:"template"`
}

type larkElement struct {
	Tag  string   `json:"tag"`
	Text larkText `json:"text"`
}

// larkText is plain_text: what the event says is shown as it is, never
// read as Lark's Markdown.
type larkText struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

func (n *lark) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	color := "turquoise"
	if e.Severity == events.SeverityError {
		color = "red"
	}
	lines := alertLines(e)
	body := lines[1:]
	if len(body) == 0 {
		body = lines // a card needs text: the heading, then
	}
	msg := larkMessage{
		MsgType: "interactive",
		Card: larkCard{
			Config:   larkConfig{WideScreenMode: true},
			Header:   larkHeader{Title: larkText{Tag: "plain_text", Content: plainText.render(lines[:1], 400)}, Template: color},
			Elements: []larkElement{{Tag: "div", Text: larkText{Tag: "plain_text", Content: plainText.render(body, larkLimit)}}},
		},
	}
	a, err := n.cfg.do(ctx, request{method: http.MethodPost, url: n.cfg.Address, payload: msg, contentType: "application/json; charset=utf-8"})
	if err != nil {
		return err
	}
	if err := httpError(n.cfg.Type, a); err != nil {
		return err
	}
	// A refused message is HTTP 200 with a non-zero code (19021 bad
	// signature, 19024 keyword check, 9499 bad request, ...).
	var ans struct {
		Code *int `json:"code"`
	}
	if json.Unmarshal(a.body, &ans) != nil || ans.Code == nil {
		return &PermanentError{Err: errors.New(`the lark endpoint's answer has no "code"`)}
	}
	if *ans.Code != 0 {
		return statusError(n.cfg.Type, a, strconv.Itoa(*ans.Code), larkRetryable[*ans.Code])
	}
	return nil
}
