package notifier

// What the stand-ins of every group share: an httptest server that plays
// a service (standIn), the strict decoding of a request body, the
// services' JSON answers, credentials checks, and a transport for tests
// that need no server. Each service's own contract (what it requires,
// what it answers) is in its group's test files.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// testToken is the token the stand-ins take.
const testToken = "s3cr3t-t0ken"

// handler validates a request as a service does, writes the service's
// answer, and returns what the service accepted (nil when it refused).
type handler func(w http.ResponseWriter, r *http.Request, body []byte) (accepted any)

// service is a handler that returns its answer rather than writing it:
// the status, the JSON answer, and what it accepted on a 2xx.
type service func(r *http.Request, body []byte) (code int, answer any, accepted any)

// handle writes svc's answer as JSON, with Retry-After on a 429 as the
// services send it.
func (svc service) handle(w http.ResponseWriter, r *http.Request, body []byte) any {
	code, answer, accepted := svc(r, body)
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "30")
	}
	reply(w, code, answer)
	if code/100 != 2 {
		return nil
	}
	return accepted
}

// overrideBody is what a stand-in told to answer(code) answers: text the
// notifier must not repeat (a URL, the token, a sentence).
const overrideBody = `{"message":"call SECRET-BODY support: see https://evil.example ` + testToken + `"}`

// standIn is an httptest server playing a service through handle. It
// keeps every request it got and what it accepted; answer(code) makes it
// answer every request with code instead.
type standIn struct {
	*httptest.Server
	mu       sync.Mutex
	took     []any
	seen     []*http.Request
	override int
	header   http.Header
}

func newStandIn(t *testing.T, handle handler) *standIn { return startStandIn(t, handle, false) }

// newTLSStandIn is a standIn over https, for the services whose endpoint
// a notifier makes https:// itself (googlepubsub, azureeventhub): its
// certificate is httptest's, which pemOf gives as a CA.
func newTLSStandIn(t *testing.T, handle handler) *standIn { return startStandIn(t, handle, true) }

func startStandIn(t *testing.T, handle handler, useTLS bool) *standIn {
	s := &standIn{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		override, header := s.override, s.header
		s.seen = append(s.seen, r.Clone(r.Context()))
		s.mu.Unlock()
		if override != 0 {
			for k, v := range header {
				w.Header()[k] = v
			}
			if override == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "30")
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(override)
			_, _ = io.WriteString(w, overrideBody)
			return
		}
		if accepted := handle(w, r, body); accepted != nil {
			s.mu.Lock()
			s.took = append(s.took, accepted)
			s.mu.Unlock()
		}
	}))
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// answer makes the stand-in answer every request with code and header
// (and overrideBody).
func (s *standIn) answer(code int, header http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.override, s.header = code, header
}

// got returns what the stand-in accepted, as its handler returned it.
func (s *standIn) got() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.took...)
}

// accepted returns what the stand-in accepted, as JSON maps.
func (s *standIn) accepted() []map[string]any {
	var out []map[string]any
	for _, v := range s.got() {
		var m map[string]any
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

// requests returns the requests the stand-in got.
func (s *standIn) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// count is how many requests the stand-in got.
func (s *standIn) count() int { return len(s.requests()) }

// strictJSON decodes one JSON value, refusing fields v does not have and
// data after it, as the services' validators do.
func strictJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// reply writes a JSON answer.
func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// hasAuth checks that a request's Authorization header is want.
func hasAuth(want string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Header.Get("Authorization") == want }
}

// basicHeader is the Authorization header of HTTP Basic authentication,
// written out by the test (not by the code under test).
func basicHeader(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// roundTripFunc is a transport in a function: an answer no server gives,
// or a request that must not leave the test.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// expectPostFails posts the test event through cfg's notifier and checks
// the error's text and whether the dispatcher would retry it.
func expectPostFails(t *testing.T, cfg Config, want string, permanent bool) {
	t.Helper()
	g := NewWithT(t)
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), testEvent())
	g.Expect(err).To(MatchError(want))
	g.Expect(IsPermanent(err)).To(Equal(permanent), "permanent")
	g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
}
