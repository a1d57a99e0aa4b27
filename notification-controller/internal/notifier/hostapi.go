package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// hostCall is one request to a Git host's API.
type hostCall struct {
	method, url string
	// auth holds the request's credentials, in the host's form (and the
	// host's own headers).
	auth http.Header
	// body, when not nil, is sent as JSON.
	body any
	// into, when not nil, receives the JSON of a 2xx answer (at most
	// limit of it, maxResponse when zero).
	into  any
	limit int64
}

// answerError is a host's non-2xx answer: only its status code is kept,
// never its body or reason phrase, and a hint of the usual cause.
type answerError struct {
	Type string
	Code int
}

func (e *answerError) Error() string {
	msg := fmt.Sprintf("the %s API answered %d %s", e.Type, e.Code, http.StatusText(e.Code))
	// The hints name what the type writes: commit statuses, or comments.
	writes, object, refused := "commit statuses", "commit", "the status: is the commit in this repository?"
	if _, comments := commentKinds[e.Type]; comments {
		writes, object, refused = "pull or merge request comments", "pull or merge request", "the comment"
	}
	switch e.Code {
	case http.StatusUnauthorized, http.StatusNonAuthoritativeInfo:
		msg += " (the token is not valid)"
	case http.StatusForbidden:
		msg += " (the token may not write " + writes + " of this repository)"
	case http.StatusNotFound:
		msg += " (no such repository or " + object + ", or the token cannot see it)"
	case http.StatusUnprocessableEntity:
		msg += " (the host refused " + refused + ")"
	}
	return msg
}

// call sends c once with cfg's client (Config.do). Rate limits (429, or
// a 403 that says it is one, as GitHub's does), timeouts and server errors
// are plain errors, retried by the dispatcher; any other non-2xx answer is
// a PermanentError wrapping an *answerError. Azure DevOps answers a bad
// token with 203 and a sign-in page: a 203 counts as refused.
func call(ctx context.Context, cfg Config, c hostCall) error {
	header := http.Header{"Accept": {"application/json"}}
	for k, v := range c.auth {
		header[http.CanonicalHeaderKey(k)] = v
	}
	a, err := cfg.do(ctx, request{method: c.method, url: c.url, payload: c.body, header: header, api: true, limit: c.limit})
	if err != nil {
		return err
	}
	if a.ok() && a.code != http.StatusNonAuthoritativeInfo {
		if c.into == nil {
			return nil
		}
		if err := json.NewDecoder(bytes.NewReader(a.body)).Decode(c.into); err != nil {
			return fmt.Errorf("the %s API answered %d with no JSON this controller reads", cfg.Type, a.code)
		}
		return nil
	}
	return verdict(&answerError{Type: cfg.Type, Code: a.code}, retryable(a.code) || a.rateLimited())
}

// rateLimited recognizes a 403 that is a rate limit: GitHub (and Gitea)
// answer the primary limit with X-RateLimit-Remaining: 0 and the
// secondary one with Retry-After.
func (a answer) rateLimited() bool {
	return a.code == http.StatusForbidden && (a.header.Get("X-RateLimit-Remaining") == "0" || a.header.Get("Retry-After") != "")
}

// authHeader returns the credentials of one header (a bearer token,
// GitLab's PRIVATE-TOKEN).
func authHeader(name, value string) http.Header { return http.Header{name: {value}} }

// basicAuth returns the credentials of HTTP Basic authentication.
func basicAuth(user, password string) http.Header {
	return authHeader("Authorization", basicCredentials(user, password))
}
