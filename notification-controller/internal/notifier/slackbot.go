package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"plumb.dev/pkg/events"
)

// SlackPostMessageURL is Slack's Web API method chat.postMessage, where a
// slack Provider with a bot token posts unless its address says otherwise.
const SlackPostMessageURL = "https://slack.com/api/chat.postMessage"

// slackKind builds the slack notifier: chat.postMessage with a bot token
// when the address is that method (by default with a token: ConfigFor),
// else an incoming webhook, with the token, if any, as a bearer token, as
// before (Flux's two forms).
func slackKind(cfg Config) (Notifier, error) {
	if !isPostMessage(cfg.Address) {
		if cfg.ThreadPerObject {
			return nil, errors.New(`spec.threadPerObject needs chat.postMessage with a Slack bot token (the key "token" of spec.secretRef, and no webhook address): an incoming webhook does not say which message it posted`)
		}
		return httpKind(slackPayload)(cfg)
	}
	if cfg.Token == "" {
		return nil, errors.New(`chat.postMessage needs a bot token: set the key "token" in spec.secretRef`)
	}
	if cfg.Channel == "" {
		return nil, errors.New("a slack provider with a bot token needs spec.channel, the channel to post in (an ID like C0123456789, or #name)")
	}
	return &slackBot{cfg: cfg}, nil
}

// isPostMessage reports an address that is Slack's chat.postMessage
// method (on slack.com, another Slack API host, or a proxy keeping the
// path), not an incoming webhook.
func isPostMessage(address string) bool {
	u, err := url.Parse(address)
	return err == nil && strings.HasSuffix(u.Path, "/chat.postMessage")
}

// slackBot posts through chat.postMessage with a bot token, optionally
// one thread per object.
type slackBot struct{ cfg Config }

// slackMessage is a chat.postMessage request: the webhook message (with
// channel) and, in a thread, the parent's ts.
type slackMessage struct {
	SlackPayload
	ThreadTS string `json:"thread_ts,omitempty"`
	// ReplyBroadcast shows a reply in the channel too: set for errors, so
	// a failure is not hidden in a thread.
	ReplyBroadcast bool `json:"reply_broadcast,omitempty"`
}

// slackRetryable are the chat.postMessage errors that may pass; every
// other one (invalid_auth, channel_not_found, not_in_channel, is_archived,
// msg_too_long, missing_scope, ...) needs a change of the Provider, the
// token or the channel.
var slackRetryable = map[string]bool{
	"ratelimited":         true,
	"rate_limited":        true,
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
}

// slackThreadGone are the errors of a reply whose thread is no more: the
// thread is forgotten and the retry starts a new one.
var slackThreadGone = map[string]bool{"thread_not_found": true, "invalid_thread_ts": true}

func (n *slackBot) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	msg := slackMessage{SlackPayload: slackPayload(n.cfg, e).(SlackPayload)}
	var thread string
	if n.cfg.ThreadPerObject {
		// The channel is part of the key: a Provider moved to another
		// channel starts new threads there.
		thread = n.cfg.Channel + "\x00" + objectTitle(e)
		if ts, ok := n.cfg.Threads.get(thread); ok {
			msg.ThreadTS = ts
			msg.ReplyBroadcast = e.Severity == events.SeverityError
		}
	}
	a, err := n.cfg.do(ctx, request{
		method: http.MethodPost, url: n.cfg.Address, payload: msg,
		contentType: "application/json; charset=utf-8",
		header:      bearerAuth(n.cfg.Token),
	})
	if err != nil {
		return err
	}
	if !a.ok() {
		// 429 with Retry-After when rate limited: retried.
		return httpError(n.cfg.Type, a)
	}
	// chat.postMessage answers 200 whatever happened; the body says.
	var ans struct {
		OK    *bool  `json:"ok"`
		Error string `json:"error"`
		TS    string `json:"ts"`
	}
	if err := decodeLeading(a.body, &ans.OK, &ans.Error, &ans.TS); err != nil || ans.OK == nil {
		return &PermanentError{Err: errors.New("the slack endpoint's answer is not a chat.postMessage answer")}
	}
	if !*ans.OK {
		if msg.ThreadTS != "" && slackThreadGone[ans.Error] {
			n.cfg.Threads.forget(thread)
			return statusError(n.cfg.Type, a, ans.Error, true)
		}
		return statusError(n.cfg.Type, a, serviceCode(ans.Error), slackRetryable[ans.Error])
	}
	if thread != "" && msg.ThreadTS == "" && slackTS(ans.TS) {
		n.cfg.Threads.put(thread, ans.TS)
	}
	return nil
}

// decodeLeading reads the top-level "ok", "error" and "ts" of a JSON
// object that may have been cut at maxResponse: chat.postMessage echoes
// the whole message after them, which may be longer than what is read.
// It stops once the three are known or at the first value it cannot read.
func decodeLeading(body []byte, ok **bool, code, ts *string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		var dst any
		switch t {
		case "ok":
			dst = ok
		case "error":
			dst = code
		case "ts":
			dst = ts
		default:
			dst = &json.RawMessage{}
		}
		if err := dec.Decode(dst); err != nil {
			return nil // cut short: keep what was read
		}
		if *ok != nil && (*code != "" || *ts != "") {
			return nil
		}
	}
	return nil
}

// slackTS reports a Slack message timestamp ("1712345678.000100").
func slackTS(s string) bool {
	secs, frac, ok := strings.Cut(s, ".")
	return ok && len(s) <= 32 && isDigits(secs) && isDigits(frac)
}
