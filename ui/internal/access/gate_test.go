package access

import (
	"fmt"
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
	r.AddCookie(&http.Cookie{Name: SecureCookieName, Value: "id"})
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
	cachedReviews.Store(0) // the reviews above were put in by hand, not counted
}

func TestEveryRequestNeedsTheCSRFValueReadsToo(t *testing.T) {
	g := NewWithT(t)
	gate, _ := gateWith(t, time.Now().Add(time.Hour))
	served := 0
	h := gate.Protect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	serve := func(r *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// A cookie another server on the host received, replayed: it reads
	// nothing.
	g.Expect(serve(request(http.MethodGet, ""))).To(Equal(http.StatusForbidden))
	r := request(http.MethodGet, "")
	r.Header.Set(CSRFHeader, "csrf")
	g.Expect(serve(r)).To(Equal(http.StatusOK))
	// EventSource sets no headers: a GET may carry it in the query.
	g.Expect(serve(request(http.MethodGet, ""))).To(Equal(http.StatusForbidden))
	r = request(http.MethodGet, "")
	r.URL.RawQuery = CSRFParam + "=csrf"
	g.Expect(serve(r)).To(Equal(http.StatusOK))
	r = request(http.MethodGet, "")
	r.URL.RawQuery = CSRFParam + "=wrong"
	g.Expect(serve(r)).To(Equal(http.StatusForbidden))
	// A write takes the header only.
	r = request(http.MethodPost, "{}")
	r.URL.RawQuery = CSRFParam + "=csrf"
	g.Expect(serve(r)).To(Equal(http.StatusForbidden))
	g.Expect(served).To(Equal(2))
}

func TestASecureCookieHasTheHostPrefixAndAnInsecureOneHasNot(t *testing.T) {
	g := NewWithT(t)
	secure, _ := gateWith(t, time.Now().Add(time.Hour))
	plain := &http.Request{Header: http.Header{}}
	plain.AddCookie(&http.Cookie{Name: CookieName, Value: "id"})
	g.Expect(secure.lookup(plain)).To(BeNil(), "a Secure session is only found under __Host-")
	g.Expect(secure.lookup(request(http.MethodGet, ""))).NotTo(BeNil())

	w := httptest.NewRecorder()
	r := request(http.MethodPost, "")
	secure.Logout(w, r.WithContext(WithSession(r.Context(), secure.sessions["id"])))
	g.Expect(w.Header().Get("Set-Cookie")).To(And(HavePrefix(SecureCookieName+"="), ContainSubstring("Secure"), ContainSubstring("Path=/")))

	for _, opts := range []Options{{Mode: ModeToken, TTL: time.Hour, InsecureCookies: true}, {Mode: ModeKubeconfig, TTL: time.Hour}} {
		gate, err := New(opts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gate.cookieName()).To(Equal(CookieName), "a browser refuses __Host- on a cookie that is not Secure")
	}
}

func TestAUsersEleventhSessionEndsTheirOldest(t *testing.T) {
	g := NewWithT(t)
	gate, err := New(Options{Mode: ModeToken, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	session := func(user string, i int) *Session {
		return &Session{user: user, id: user + time.Duration(i).String(), expires: start.Add(time.Hour + time.Duration(i)*time.Second),
			reviews: map[review]verdict{}, now: time.Now}
	}
	other := session("bob", 0)
	g.Expect(gate.keep(other)).To(Succeed())
	var alices []*Session
	for i := range MaxSessionsPerUser + 2 {
		s := session("alice", i)
		g.Expect(gate.keep(s)).To(Succeed())
		alices = append(alices, s)
	}
	g.Expect(gate.sessions).To(HaveLen(MaxSessionsPerUser + 1))
	g.Expect(gate.sessions).NotTo(HaveKey(alices[0].id), "the oldest went first")
	g.Expect(gate.sessions).NotTo(HaveKey(alices[1].id))
	for _, s := range alices[2:] {
		g.Expect(gate.sessions).To(HaveKey(s.id))
	}
	g.Expect(gate.sessions).To(HaveKey(other.id), "another user's session is not theirs to end")
}

func TestSignInsFromOneAddressAreRateLimited(t *testing.T) {
	g := NewWithT(t)
	gate, err := New(Options{Mode: ModeToken, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	gate.now = func() time.Time { return now }
	login := func(addr string) int {
		r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"token": ""}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		gate.Login(w, r)
		return w.Code
	}
	for range loginBurst {
		g.Expect(login("192.0.2.1:1000")).To(Equal(http.StatusUnauthorized), "an empty token is refused without asking the API server")
	}
	g.Expect(login("192.0.2.1:1001")).To(Equal(http.StatusTooManyRequests), "another port of the same address shares the limit")
	g.Expect(login("192.0.2.2:1000")).To(Equal(http.StatusUnauthorized), "another address has its own")
	now = now.Add(time.Second)
	g.Expect(login("192.0.2.1:1000")).To(Equal(http.StatusUnauthorized), "a second later there is one more")

	for i := range maxLimiters + 1 {
		gate.allowLogin(&http.Request{RemoteAddr: fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)})
	}
	g.Expect(len(gate.limiters)).To(BeNumerically("<=", maxLimiters), "the addresses remembered are bounded")
}

func TestTheReviewsOfAllSessionsTogetherAreBounded(t *testing.T) {
	g := NewWithT(t)
	cachedReviews.Store(MaxCachedReviews)
	defer cachedReviews.Store(0)
	now := time.Now()
	s := &Session{reviews: map[review]verdict{}, now: func() time.Time { return now }}
	s.reviews[review{"get", "g", "r", "ns", "old"}] = verdict{at: now.Add(-ReviewTTL)}
	s.reviews[review{"get", "g", "r", "ns", "fresh"}] = verdict{allowed: true, at: now}
	s.forget()
	g.Expect(cachedReviews.Load()).To(BeEquivalentTo(MaxCachedReviews-1), "an expired answer frees its room")
	s.release()
	g.Expect(s.reviews).To(BeEmpty())
	g.Expect(cachedReviews.Load()).To(BeEquivalentTo(MaxCachedReviews-2), "an ended session frees all of its room")
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
