package notifier

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// request is one HTTP request of a notifier: a webhook's post, a chat
// service's message, a paging service's event, a Git host's API call.
// Every one goes through Config.do, so every one follows the same rules:
// the dispatcher's client, a bounded answer, errors that quote neither
// the address, a secret, nor the answer's words.
type request struct {
	method, url string
	// payload, when not nil, is sent as JSON; else body, when not nil.
	payload any
	body    []byte
	// contentType is the body's type ("application/json" when empty).
	contentType string
	// header holds the authentication and the service's own headers; a
	// header here replaces the one do sets.
	header http.Header
	// secret is a credential the URL itself holds (Telegram's token is in
	// its path): it is cut out of transport errors too.
	secret string
	// api words the errors for a Git host's API ("calling the github
	// API") rather than an endpoint ("posting to the slack endpoint").
	api bool
	// limit bounds the answer's body read, maxResponse when zero.
	limit int64
}

// answer is a service's reply: the status code, the header (Retry-After,
// a rate limit's) and at most
// maxResponse bytes of the body, for the services that say in the body
// whether the message was taken or whose answer holds a value we need.
type answer struct {
	code   int
	header http.Header
	body   []byte
}

// ok reports a 2xx status.
func (a answer) ok() bool { return a.code >= 200 && a.code < 300 }

// do sends r once through cfg.Client and reads the bounded answer. User
// info in the URL is taken out of it and sent as basic credentials,
// unless r sets an Authorization header (a token wins), as net/http
// would; the URL the transport sees then holds no password. The error
// names neither the URL nor r.secret, and says nothing of the answer: do
// fails only when no answer came.
func (cfg Config) do(ctx context.Context, r request) (answer, error) {
	body := r.body
	if r.payload != nil {
		b, err := json.Marshal(r.payload)
		if err != nil {
			return answer{}, &PermanentError{Err: fmt.Errorf("encoding the %s request: %w", cfg.Type, err)}
		}
		body = b
	}
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, reader)
	if err != nil {
		if r.api {
			return answer{}, &PermanentError{Err: fmt.Errorf("the %s address does not make a valid API URL", cfg.Type)}
		}
		return answer{}, &PermanentError{Err: fmt.Errorf("the %s address is not a valid URL", cfg.Type)}
	}
	if body != nil {
		contentType := r.contentType
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "plumb-notification-controller")
	for k, v := range r.header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	if user := req.URL.User; user != nil {
		req.URL.User = nil
		if req.Header.Get("Authorization") == "" {
			password, _ := user.Password()
			req.Header.Set("Authorization", basicCredentials(user.Username(), password))
		}
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return answer{}, transportErrorOf(cfg.Type, r, err)
	}
	defer resp.Body.Close()
	// The answer's body, and the reason phrase of its status line, are
	// the endpoint's words: they are never repeated into events, status
	// or logs, only the status code is (and a service's error code of a
	// fixed vocabulary: serviceCode).
	limit := r.limit
	if limit <= 0 {
		limit = maxResponse
	}
	got, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	// A longer answer (Slack echoes the message) is read to its end, up
	// to maxResponse more, so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	return answer{code: resp.StatusCode, header: resp.Header, body: got}, nil
}

// transportError is a request that got no answer. Its text is redacted;
// Unwrap gives the cause to errors.As (IsPermanent looks for a refused
// address in it).
type transportError struct {
	msg string
	err error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.err }

func transportErrorOf(typ string, r request, err error) error {
	err = redact(err)
	cause := err.Error()
	if r.secret != "" {
		cause = strings.ReplaceAll(cause, r.secret, "[token]")
	}
	if r.api {
		return &transportError{msg: fmt.Sprintf("calling the %s API: %s", typ, cause), err: err}
	}
	return &transportError{msg: fmt.Sprintf("posting to the %s endpoint: %s", typ, cause), err: err}
}

// verdict is err as the dispatcher should take it: retried, or a
// PermanentError.
func verdict(err error, retry bool) error {
	if retry {
		return err
	}
	return &PermanentError{Err: err}
}

// err is the error of a non-2xx answer of a service whose status code
// says it all (the webhooks, the paging services): the status alone,
// retried when retryable says so. Nil for a 2xx answer.
func (a answer) err(typ string) error {
	if a.ok() {
		return nil
	}
	return verdict(errors.New(endpointAnswered(typ, a.code)), retryable(a.code))
}

func endpointAnswered(typ string, code int) string {
	return fmt.Sprintf("the %s endpoint answered %d %s", typ, code, http.StatusText(code))
}

// statusError is the error of a non-2xx answer of a chat service, or of a
// 2xx answer whose body says the message was refused (code is then 200).
// The text gives the status and, when the service has one, its error
// code from a fixed vocabulary (serviceCode), never free text of the
// answer, and the Retry-After of a failure that may pass. retry says
// whether it may; without a service verdict, pass retryable(a.code).
func statusError(typ string, a answer, code string, retry bool) error {
	msg := endpointAnswered(typ, a.code)
	if code != "" {
		msg += fmt.Sprintf(", error %q", code)
	}
	if after := a.header.Get("Retry-After"); retry && isDigits(after) && len(after) <= 6 {
		msg += fmt.Sprintf(" (retry after %ss)", after)
	}
	return verdict(errors.New(msg), retry)
}

// httpError is statusError for chat services whose status code says it
// all.
func httpError(typ string, a answer) error {
	if a.ok() {
		return nil
	}
	return statusError(typ, a, "", retryable(a.code))
}

// retryable says which answers may succeed later: rate limits, timeouts and
// server errors. Other client errors mean the request itself is wrong.
func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// bearerAuth is the Authorization header of a bearer token.
func bearerAuth(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// basicCredentials is the Authorization value of HTTP Basic
// authentication.
func basicCredentials(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// send is do for the services whose status code says it all: the error
// is the transport's, or the answer's (answer.err).
func (cfg Config) send(ctx context.Context, r request) error {
	a, err := cfg.do(ctx, r)
	if err != nil {
		return err
	}
	return a.err(cfg.Type)
}
