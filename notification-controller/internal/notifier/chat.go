package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	notificationv1 "plumb.dev/api/notification/v1"
)

// chatKinds are the chat services besides the webhooks of notifier.go:
// googlechat, telegram, matrix, rocket, webex, lark, zulip. Each speaks its
// service's own API with plain net/http and small request types of its
// own: the official SDKs (where there is one in Go) bring far more than
// one message call needs, and none would use the dispatcher's client.
var chatKinds = map[string]kind{
	notificationv1.GoogleChatProvider: {build: googleChatKind},
	notificationv1.TelegramProvider:   {build: telegramKind, defaultAddress: TelegramAPI},
	notificationv1.MatrixProvider:     {build: matrixKind},
	notificationv1.RocketProvider:     {build: rocketKind},
	notificationv1.WebexProvider:      {build: webexKind, defaultAddress: WebexMessagesURL},
	notificationv1.LarkProvider:       {build: larkKind},
	notificationv1.ZulipProvider:      {build: zulipKind},
}

// chatCall is one request to a chat service.
type chatCall struct {
	method, url string
	// payload is sent as JSON; body, when there is none.
	payload     any
	body        []byte
	contentType string
	// header holds the authentication (and little else).
	header http.Header
	// secret is a credential the URL itself holds (Telegram's token is in
	// its path): it is cut out of transport errors too.
	secret string
}

// answer is a chat service's reply: the status code, and at most
// maxResponse bytes of the body, for the services that say in the body
// whether the message was taken.
type answer struct {
	code int
	body []byte
	// retryAfter is the Retry-After header, kept for the error text.
	retryAfter string
}

// ok reports a 2xx status.
func (a answer) ok() bool { return a.code >= 200 && a.code < 300 }

// do sends c through cfg.Client and reads the bounded answer. The error
// names neither the URL nor the secret.
func (cfg Config) do(ctx context.Context, c chatCall) (answer, error) {
	if c.payload != nil {
		b, err := json.Marshal(c.payload)
		if err != nil {
			return answer{}, &PermanentError{Err: fmt.Errorf("encoding the %s message: %w", cfg.Type, err)}
		}
		c.body = b
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, bytes.NewReader(c.body))
	if err != nil {
		return answer{}, &PermanentError{Err: fmt.Errorf("the %s address is not a valid URL", cfg.Type)}
	}
	req.Header.Set("Content-Type", c.contentType)
	req.Header.Set("User-Agent", "plumb-notification-controller")
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		msg := redact(err).Error()
		if c.secret != "" {
			msg = strings.ReplaceAll(msg, c.secret, "[token]")
		}
		// The cause stays reachable for IsPermanent (a refused address).
		return answer{}, &transportError{typ: cfg.Type, msg: msg, err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	return answer{code: resp.StatusCode, body: body, retryAfter: resp.Header.Get("Retry-After")}, nil
}

// transportError is a request that got no answer. Its text is redacted;
// Unwrap gives the cause (which may quote the URL) to errors.As only.
type transportError struct {
	typ, msg string
	err      error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("posting to the %s endpoint: %s", e.typ, e.msg)
}
func (e *transportError) Unwrap() error { return e.err }

// statusError is the error of a non-2xx answer, or of a 2xx answer whose
// body says the message was refused (code is then 200). The text gives
// the status and, when the service has one, its error code from a fixed
// vocabulary (serviceCode), never free text of the answer. retry says
// whether the failure may pass; without a service verdict, pass
// retryable(a.code).
func statusError(typ string, a answer, code string, retry bool) error {
	msg := fmt.Sprintf("the %s endpoint answered %d %s", typ, a.code, http.StatusText(a.code))
	if code != "" {
		msg += fmt.Sprintf(", error %q", code)
	}
	if retry && a.retryAfter != "" && isDigits(a.retryAfter) && len(a.retryAfter) <= 6 {
		msg += fmt.Sprintf(" (retry after %ss)", a.retryAfter)
	}
	if retry {
		return fmt.Errorf("%s", msg)
	}
	return &PermanentError{Err: fmt.Errorf("%s", msg)}
}

// httpError is statusError for services whose status code says it all.
func httpError(typ string, a answer) error {
	if a.ok() {
		return nil
	}
	return statusError(typ, a, "", retryable(a.code))
}

// maxServiceCode bounds an error code quoted from an answer.
const maxServiceCode = 64

// serviceCode returns an error code of a service's fixed vocabulary
// (Slack's channel_not_found, Matrix's M_FORBIDDEN, Zulip's
// STREAM_DOES_NOT_EXIST) when it looks like one: short, and only letters,
// digits, '_' and '.'. Anything else (free text an endpoint chose) is
// dropped, so it never reaches a condition or event.
func serviceCode(s string) string {
	if s == "" || len(s) > maxServiceCode {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return ""
		}
	}
	return s
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
