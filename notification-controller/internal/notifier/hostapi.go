package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// hostCall is one request to a Git host's API.
type hostCall struct {
	method, url string
	// auth sets the request's credentials, in the host's form.
	auth func(*http.Request)
	// body, when not nil, is sent as JSON.
	body any
	// into, when not nil, receives the JSON of a 2xx answer (at most
	// maxResponse of it).
	into any
}

// answerError is a host's non-2xx answer: only its status code is kept,
// never its body or reason phrase, and a hint of the usual cause.
type answerError struct {
	Type string
	Code int
}

func (e *answerError) Error() string {
	msg := fmt.Sprintf("the %s API answered %d %s", e.Type, e.Code, http.StatusText(e.Code))
	switch e.Code {
	case http.StatusUnauthorized, http.StatusNonAuthoritativeInfo:
		msg += " (the token is not valid)"
	case http.StatusForbidden:
		msg += " (the token may not write commit statuses of this repository)"
	case http.StatusNotFound:
		msg += " (no such repository or commit, or the token cannot see it)"
	case http.StatusUnprocessableEntity:
		msg += " (the host refused the status: is the commit in this repository?)"
	}
	return msg
}

// call sends c once with cfg's client. Rate limits (429, or a 403 that
// says it is one, as GitHub's does), timeouts and server errors are plain
// errors, retried by the dispatcher; any other non-2xx answer is a
// PermanentError wrapping an *answerError. Azure DevOps answers a bad
// token with 203 and a sign-in page: a 203 counts as refused.
func call(ctx context.Context, cfg Config, c hostCall) error {
	var body io.Reader
	if c.body != nil {
		b, err := json.Marshal(c.body)
		if err != nil {
			return &PermanentError{Err: fmt.Errorf("encoding the %s request: %w", cfg.Type, err)}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("the %s address does not make a valid API URL", cfg.Type)}
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "plumb-notification-controller")
	c.auth(req)
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("calling the %s API: %w", cfg.Type, redact(err))
	}
	defer resp.Body.Close()
	limited := io.LimitReader(resp.Body, maxResponse)
	defer func() { _, _ = io.Copy(io.Discard, limited) }()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.StatusCode != http.StatusNonAuthoritativeInfo {
		if c.into == nil {
			return nil
		}
		if err := json.NewDecoder(limited).Decode(c.into); err != nil {
			return fmt.Errorf("the %s API answered %d with no JSON this controller reads", cfg.Type, resp.StatusCode)
		}
		return nil
	}
	aerr := &answerError{Type: cfg.Type, Code: resp.StatusCode}
	if retryable(resp.StatusCode) || rateLimited(resp) {
		return aerr
	}
	return &PermanentError{Err: aerr}
}

// rateLimited recognizes a 403 that is a rate limit: GitHub (and Gitea)
// answer the primary limit with X-RateLimit-Remaining: 0 and the
// secondary one with Retry-After.
func rateLimited(resp *http.Response) bool {
	return resp.StatusCode == http.StatusForbidden &&
		(resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != "")
}

// authHeader returns an auth function that sets one header (a bearer
// token, GitLab's PRIVATE-TOKEN).
func authHeader(name, value string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set(name, value) }
}

// basicAuth returns an auth function for HTTP Basic authentication.
func basicAuth(user, password string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}
