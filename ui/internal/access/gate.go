package access

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/ui/internal/httpapi"
)

// Mode is how users sign in.
type Mode string

const (
	// ModeKubeconfig: one user, the kubeconfig's, behind a one-time secret.
	ModeKubeconfig Mode = "kubeconfig"
	// ModeToken: each user signs in with their own bearer token.
	ModeToken Mode = "token"
)

// CSRFHeader is the header every /api/ request but POST /api/login must
// carry, with the csrf value the sign-in answered. A browser sends the
// cookie by itself, to every port of the host (cookies ignore ports), so
// another local server the user visits receives plumb_session; it cannot
// know this value, which only the page's own origin keeps.
const CSRFHeader = "X-Plumb-CSRF"

// CSRFParam is the query parameter that carries the CSRF value where a
// header cannot be set: EventSource (GET /api/live). Taken on GETs only.
const CSRFParam = "csrf"

// CookieName is the session cookie's name; SecureCookieName its name when
// the cookie is Secure: the __Host- prefix makes the browser refuse it
// unless it is Secure, host-only and for path /, so a sibling domain or a
// plain-HTTP answer cannot plant or overwrite it.
const (
	CookieName       = "plumb_session"
	SecureCookieName = "__Host-plumb_session"
)

// maxSessions bounds the sessions kept in memory: sign-ins beyond it are
// refused (503) until some expire, rather than letting anyone holding a
// valid token fill the server's memory.
const maxSessions = 10000

// MaxSessionsPerUser bounds one user's sessions: a further sign-in ends
// that user's oldest, so one token cannot fill the store for everyone.
const MaxSessionsPerUser = 10

// The sign-in rate of one client address: a person signs in a few times,
// a script trying tokens (each one a SelfSubjectReview on the API server)
// many.
const (
	loginRate  = rate.Limit(1) // per second
	loginBurst = 20
	// maxLimiters bounds the addresses remembered; when full, those whose
	// limiter is back to a full burst (nothing to remember) are dropped,
	// and if that frees nothing, all.
	maxLimiters = 10000
)

// maxTokenBytes bounds a bearer token (OIDC ID tokens with many groups
// run to a few KiB).
const maxTokenBytes = 16 << 10

// Access is what the other packages of the UI get from this one: the
// session of a request the server let through. *Gate implements it.
type Access interface {
	From(r *http.Request) *Session
}

// Options configure a Gate.
type Options struct {
	Mode Mode
	// Config is the server's own rest.Config. In kubeconfig mode it is the
	// user's, and every session acts with it; in token mode only its host
	// and CA are used for users, with each user's token.
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// TTL ends a session this long after sign-in.
	TTL time.Duration
	// InsecureCookies leaves the Secure attribute off the session cookie,
	// for a token-mode server reached over plain HTTP (a port-forward).
	// Kubeconfig mode, on loopback over HTTP, never sets it.
	InsecureCookies bool
}

// Gate issues, checks and ends sessions.
type Gate struct {
	opts Options

	mu       sync.Mutex
	sessions map[string]*Session
	secret   string // kubeconfig mode: the current one-time login secret
	now      func() time.Time

	limitersMu sync.Mutex
	limiters   map[string]*rate.Limiter // POST /api/login's, by device or client address
	// deviceKey signs device cookies (device.go); a restart forgets them.
	deviceKey []byte
}

// New returns a Gate. In kubeconfig mode it also has a first login secret.
func New(opts Options) (*Gate, error) {
	if opts.Mode != ModeKubeconfig && opts.Mode != ModeToken {
		return nil, fmt.Errorf("unknown authentication mode %q: kubeconfig or token", opts.Mode)
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("the session TTL must be positive, got %s", opts.TTL)
	}
	g := &Gate{opts: opts, sessions: map[string]*Session{}, now: time.Now, limiters: map[string]*rate.Limiter{},
		deviceKey: []byte(randomString())}
	if opts.Mode == ModeKubeconfig {
		g.secret = randomString()
	}
	return g, nil
}

// Mode is the gate's sign-in mode.
func (g *Gate) Mode() Mode { return g.opts.Mode }

// LoginSecret is, in kubeconfig mode, the secret that POST /api/login
// trades for a session. Each is good once: using it makes a new one, which
// the next call returns (so `plumb ui` or a test can open another
// browser). "" in token mode.
func (g *Gate) LoginSecret() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.secret
}

// From returns the session Protect put in the request's context.
func (g *Gate) From(r *http.Request) *Session { return From(r) }

// Protect serves h only for a request with a live session, which it puts
// in the request's context, and that carries the session's CSRF value:
// every request, reads too, in both modes. In kubeconfig mode the cookie
// reaches every server on 127.0.0.1, which could replay it with the right
// Host; in token mode the same rule costs nothing and keeps a leaked
// cookie alone from reading anything. A GET may carry the value as the
// csrf query parameter instead (EventSource sets no headers). Bodies are
// cut at httpapi.MaxBody.
func (g *Gate) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := g.lookup(r)
		if s == nil {
			httpapi.Error(w, http.StatusUnauthorized, "sign in first")
			return
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			got = r.URL.Query().Get(CSRFParam)
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			httpapi.Error(w, http.StatusForbidden, "the %s header is missing or wrong: reload the page", CSRFHeader)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, httpapi.MaxBody)
		h.ServeHTTP(w, r.WithContext(WithSession(r.Context(), s)))
	})
}

// secure reports whether the session cookie is Secure: token mode
// without --insecure-cookies (kubeconfig mode is plain HTTP on loopback).
func (g *Gate) secure() bool { return g.opts.Mode == ModeToken && !g.opts.InsecureCookies }

// cookieName is the session cookie's name: with the __Host- prefix when
// it is Secure (a browser refuses the prefix on a cookie that is not).
func (g *Gate) cookieName() string {
	if g.secure() {
		return SecureCookieName
	}
	return CookieName
}

// lookup returns the live session the request's cookie names.
func (g *Gate) lookup(r *http.Request) *Session {
	c, err := r.Cookie(g.cookieName())
	if err != nil || c.Value == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[c.Value]
	if s == nil {
		return nil
	}
	if !g.now().Before(s.expires) {
		g.end(s)
		return nil
	}
	return s
}

// end forgets s and its cached reviews; g.mu is held.
func (g *Gate) end(s *Session) {
	delete(g.sessions, s.id)
	s.release()
}

// loginRequest is POST /api/login's body.
type loginRequest struct {
	Token  string `json:"token"`
	Secret string `json:"secret"`
}

// sessionInfo is what /api/login and /api/session answer.
type sessionInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	Mode   Mode     `json:"mode"`
	CSRF   string   `json:"csrf,omitempty"`
}

// Login serves POST /api/login, the one /api/ route served without a
// session: {"token"} or {"secret"} → the session cookie and who signed in.
func (g *Gate) Login(w http.ResponseWriter, r *http.Request) {
	if !g.allowLogin(r) {
		w.Header().Set("Retry-After", "1")
		httpapi.Error(w, http.StatusTooManyRequests, "too many sign-ins from this browser or address: wait a little")
		return
	}
	// A form another site posts cannot be JSON without a CORS preflight,
	// which this server never grants.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpapi.Error(w, http.StatusUnsupportedMediaType, "sign in with a JSON body")
		return
	}
	var req loginRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	var (
		s   *Session
		err error
	)
	switch g.opts.Mode {
	case ModeKubeconfig:
		if !g.takeSecret(req.Secret) {
			httpapi.Error(w, http.StatusUnauthorized, "the login secret is wrong or was used already: open the address `plumb ui` printed last")
			return
		}
		s, err = g.newSession(r.Context(), rest.CopyConfig(g.opts.Config))
	case ModeToken:
		if req.Token == "" || len(req.Token) > maxTokenBytes {
			httpapi.Error(w, http.StatusUnauthorized, "give a Kubernetes bearer token of at most %d bytes", maxTokenBytes)
			return
		}
		s, err = g.newSession(r.Context(), g.userConfig(req.Token))
	}
	if err != nil {
		if apierrors.IsUnauthorized(err) {
			httpapi.Error(w, http.StatusUnauthorized, "the API server does not accept this token")
			return
		}
		httpapi.APIError(w, err)
		return
	}
	if err := g.keep(s); err != nil {
		httpapi.Error(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: g.cookieName(), Value: s.id, Path: "/", MaxAge: int(g.opts.TTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.secure(),
	})
	g.rememberDevice(w, r)
	// The answer carries the csrf value every further request needs: the
	// page keeps it in its origin's storage.
	httpapi.JSON(w, http.StatusOK, info(s))
}

// allowLogin takes one sign-in out of a limiter: the device's, for a
// browser with a device cookie of this Gate (device.go: one that signed in
// here before), else the client address's. The address is the
// connection's: behind a proxy all of its clients without a device cookie
// share one limiter, which bounds what a script can try, while those who
// signed in before keep a limiter of their own that the script cannot
// spend.
func (g *Gate) allowLogin(r *http.Request) bool {
	key := "device:" + g.device(r)
	if key == "device:" {
		addr, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			addr = r.RemoteAddr
		}
		key = "address:" + addr
	}
	g.limitersMu.Lock()
	defer g.limitersMu.Unlock()
	l := g.limiters[key]
	if l == nil {
		if len(g.limiters) >= maxLimiters {
			now := g.now()
			for k, old := range g.limiters {
				if old.TokensAt(now) >= loginBurst {
					delete(g.limiters, k)
				}
			}
			if len(g.limiters) >= maxLimiters {
				clear(g.limiters)
			}
		}
		l = rate.NewLimiter(loginRate, loginBurst)
		g.limiters[key] = l
	}
	return l.AllowN(g.now(), 1)
}

// takeSecret reports whether secret is the current login secret, and if
// so replaces it.
func (g *Gate) takeSecret(secret string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(g.secret)) != 1 {
		return false
	}
	g.secret = randomString()
	return true
}

// userConfig is the server's host and CA with token as the only
// credential.
func (g *Gate) userConfig(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(g.opts.Config)
	cfg.BearerToken = token
	return cfg
}

// newSession asks the API server who cfg is (a SelfSubjectReview with cfg's
// own credentials: a token it does not accept fails with 401) and returns
// the session of that user.
func (g *Gate) newSession(ctx context.Context, cfg *rest.Config) (*Session, error) {
	c, err := client.New(cfg, client.Options{Scheme: g.opts.Scheme, Mapper: g.opts.Mapper})
	if err != nil {
		return nil, err
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return nil, err
	}
	u := review.Status.UserInfo
	if u.Username == "" {
		return nil, errors.New("the API server did not say who this is")
	}
	s, err := NewSession(cfg, g.opts.Scheme, g.opts.Mapper, g.opts.Mode, u.Username, u.Groups)
	if err != nil {
		return nil, err
	}
	s.id, s.csrf = randomString(), randomString()
	s.expires = g.now().Add(g.opts.TTL)
	return s, nil
}

// keep stores s. It drops expired sessions first, and the user's oldest
// ones beyond MaxSessionsPerUser-1, so that s is at most the user's
// MaxSessionsPerUser-th; the store as a whole is refused beyond
// maxSessions. A sign-in is rate-limited, so the sweep (at most
// maxSessions sessions) is not done often.
func (g *Gate) keep(s *Session) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	var mine []*Session
	for _, old := range g.sessions {
		switch {
		case !now.Before(old.expires):
			g.end(old)
		case old.user == s.user:
			mine = append(mine, old)
		}
	}
	if len(mine) >= MaxSessionsPerUser {
		sort.Slice(mine, func(i, j int) bool { return mine[i].expires.Before(mine[j].expires) })
		for _, old := range mine[:len(mine)-MaxSessionsPerUser+1] {
			g.end(old)
		}
	}
	if len(g.sessions) >= maxSessions {
		return fmt.Errorf("%d sessions are open: sign in again later", maxSessions)
	}
	g.sessions[s.id] = s
	return nil
}

// Logout serves POST /api/logout (behind Protect): it ends the session.
func (g *Gate) Logout(w http.ResponseWriter, r *http.Request) {
	s := From(r)
	g.mu.Lock()
	g.end(s)
	g.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: g.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.secure()})
	httpapi.JSON(w, http.StatusOK, struct{}{})
}

// Session serves GET /api/session (behind Protect): who is signed in and
// the CSRF value writes carry.
func (g *Gate) Session(w http.ResponseWriter, r *http.Request) {
	httpapi.JSON(w, http.StatusOK, info(From(r)))
}

func info(s *Session) sessionInfo {
	groups := s.Groups()
	if groups == nil {
		groups = []string{}
	}
	return sessionInfo{User: s.user, Groups: groups, Mode: s.mode, CSRF: s.csrf}
}

// randomString is 32 random bytes, URL-safe.
func randomString() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on a supported platform
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// LocalHostOnly serves h only for requests whose Host header is
// 127.0.0.1:port or localhost:port: a browser sends the name it resolved,
// so a page of another site whose name resolves to 127.0.0.1 (DNS
// rebinding) is refused (421) even though it reaches the socket. Port 0
// (a handler served by its caller, on a port the server does not know)
// checks the name only.
func LocalHostOnly(port int, h http.Handler) http.Handler {
	p := strconv.Itoa(port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, hostPort, err := net.SplitHostPort(r.Host)
		if err != nil || (host != "127.0.0.1" && host != "localhost") || (port != 0 && hostPort != p) {
			httpapi.Error(w, http.StatusMisdirectedRequest, "this server answers to 127.0.0.1:%s and localhost:%s only", p, p)
			return
		}
		h.ServeHTTP(w, r)
	})
}
