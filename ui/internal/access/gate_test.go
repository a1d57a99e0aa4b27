package access

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// gateWith returns a token-mode gate holding one session that expires at
// expires, without an API server (the session is made by hand).
func gateWith(t *testing.T, expires time.Time) (*Gate, *Session) {
	t.Helper()
	g, err := New(Options{Mode: ModeToken, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{user: "alice", mode: ModeToken, id: "id", csrf: "csrf", expires: expires, reviews: map[review]verdict{}, now: time.Now}
	g.sessions[s.id] = s
	return g, s
}

func request(method, body string) *http.Request {
	r := httptest.NewRequest(method, "/api/x", strings.NewReader(body))
	r.AddCookie(&http.Cookie{Name: CookieName, Value: "id"})
	return r
}

func TestAnExpiredSessionIsRefusedAndForgotten(t *testing.T) {
	g := NewWithT(t)
	gate, _ := gateWith(t, time.Now().Add(-time.Second))
	w := httptest.NewRecorder()
	gate.Protect(http.NotFoundHandler()).ServeHTTP(w, request(http.MethodGet, ""))
	g.Expect(w.Code).To(Equal(http.StatusUnauthorized))
	g.Expect(w.Body.String()).To(MatchJSON(`{"error": "sign in first"}`))
	g.Expect(gate.sessions).To(BeEmpty())
}

func TestProtectPutsTheSessionInTheContextAndBoundsTheBody(t *testing.T) {
	g := NewWithT(t)
	gate, s := gateWith(t, time.Now().Add(time.Hour))
	var seen *Session
	var readErr error
	h := gate.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = From(r)
		_, readErr = io.ReadAll(r.Body)
	}))
	r := request(http.MethodPost, strings.Repeat("x", 2<<20))
	r.Header.Set(CSRFHeader, "csrf")
	h.ServeHTTP(httptest.NewRecorder(), r)
	g.Expect(seen).To(BeIdenticalTo(s))
	g.Expect(readErr).To(MatchError(ContainSubstring("request body too large")))

	w := httptest.NewRecorder()
	r = request(http.MethodPost, "{}")
	r.Header.Set(CSRFHeader, "CSRF")
	h.ServeHTTP(w, r)
	g.Expect(w.Code).To(Equal(http.StatusForbidden), "the header must match exactly")
}

func TestMayDoKeepsAnAnswerForAMinute(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	s := &Session{reviews: map[review]verdict{}, now: func() time.Time { return now }}
	s.reviews[review{"get", "g", "r", "ns", "n"}] = verdict{allowed: true, at: now.Add(-30 * time.Second)}
	// A kept answer is used without asking (s has no client: asking
	// would panic).
	g.Expect(s.MayDo(t.Context(), "get", "g", "r", "ns", "n")).To(BeTrue())

	for i := range maxReviews {
		s.reviews[review{"get", "g", "r", "ns", time.Duration(i).String()}] = verdict{at: now}
	}
	s.reviews[review{"get", "g", "r", "ns", "old"}] = verdict{at: now.Add(-ReviewTTL)}
	s.forget()
	g.Expect(s.reviews).To(BeEmpty(), "more than half of the room is still in use: everything goes")

	s.reviews[review{"get", "g", "r", "ns", "new"}] = verdict{at: now}
	s.reviews[review{"get", "g", "r", "ns", "old"}] = verdict{at: now.Add(-ReviewTTL)}
	s.forget()
	g.Expect(s.reviews).To(HaveLen(1), "the expired answer goes")
}

func TestAUsersConfigCarriesTheirTokenAndNoCredentialOfTheServers(t *testing.T) {
	g := NewWithT(t)
	server := &rest.Config{Host: "https://api.example:6443", BearerToken: "ui-sa-token", Username: "u", Password: "p",
		Impersonate:     rest.ImpersonationConfig{UserName: "admin"},
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}
	gate, err := New(Options{Mode: ModeToken, Config: server, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	cfg := gate.userConfig("user-token")
	g.Expect(cfg.Host).To(Equal(server.Host))
	g.Expect(cfg.CAData).To(Equal([]byte("ca")), "the server's CA: the user talks to the same API server")
	g.Expect(cfg.BearerToken).To(Equal("user-token"))
	g.Expect(cfg.CertData).To(BeEmpty())
	g.Expect(cfg.KeyData).To(BeEmpty())
	g.Expect(cfg.Username + cfg.Password + cfg.Impersonate.UserName + cfg.BearerTokenFile).To(BeEmpty())
}
