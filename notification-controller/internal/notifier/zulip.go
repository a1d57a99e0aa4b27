package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"plumb.dev/pkg/events"
)

// Zulip's bounds: a message's content, and a topic's name in code points.
const (
	zulipLimit      = 10000
	zulipTopicLimit = 60
)

func zulipKind(cfg Config) (Notifier, error) {
	email := cfg.User
	if email == "" {
		email = cfg.Username
	}
	if email == "" || cfg.Password == "" {
		return nil, errors.New(`a zulip provider needs the bot's email in the key "username" and its API key in the key "password" of spec.secretRef`)
	}
	stream, topic := cfg.Channel, ""
	if !cfg.ThreadPerObject {
		// Flux's form: <stream>/<topic>.
		var ok bool
		stream, topic, ok = strings.Cut(cfg.Channel, "/")
		if !ok || topic == "" {
			return nil, errors.New("a zulip provider needs spec.channel as <stream>/<topic>, or the stream alone with spec.threadPerObject (a topic per object)")
		}
	}
	if stream == "" {
		return nil, errors.New("a zulip provider needs the stream in spec.channel")
	}
	return &zulip{cfg: cfg, email: email, stream: stream, topic: topic}, nil
}

// zulip sends a stream message through Zulip's REST API, as a bot.
type zulip struct {
	cfg                  Config
	email, stream, topic string
}

func (n *zulip) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	topic := n.topic
	if topic == "" {
		// One topic per object: Zulip's own threads, kept by the server.
		topic = plainText.render([]line{{text: objectTitle(e)}}, zulipTopicLimit)
	}
	form := url.Values{
		"type":    {"stream"},
		"to":      {n.stream},
		"topic":   {topic},
		"content": {markdownText.render(alertLines(e), zulipLimit)},
	}
	a, err := n.cfg.do(ctx, request{
		method: http.MethodPost, url: strings.TrimSuffix(n.cfg.Address, "/") + "/api/v1/messages",
		body: []byte(form.Encode()), contentType: "application/x-www-form-urlencoded",
		header: http.Header{"Authorization": {basicCredentials(n.email, n.cfg.Password)}},
	})
	if err != nil {
		return err
	}
	var ans struct {
		Result string `json:"result"`
		Code   string `json:"code"`
	}
	_ = json.Unmarshal(a.body, &ans)
	if a.ok() && ans.Result == "success" {
		return nil
	}
	if a.ok() {
		return &PermanentError{Err: errors.New(`the zulip endpoint answered without "result": "success"`)}
	}
	// 400 with STREAM_DOES_NOT_EXIST, BAD_REQUEST...; 401 with
	// INVALID_API_KEY; 429 with RATE_LIMIT_HIT and Retry-After.
	return statusError(n.cfg.Type, a, serviceCode(ans.Code), retryable(a.code))
}
