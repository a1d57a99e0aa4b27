package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/listen"
	"plumb.dev/pkg/options"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/live"
	"plumb.dev/ui/internal/overview"
)

// Sign-in modes (docs/design/ui.md, "Identity").
const (
	// AuthKubeconfig serves one user, Options.Config's, on loopback,
	// behind a one-time login secret.
	AuthKubeconfig = string(access.ModeKubeconfig)
	// AuthToken has each user sign in with a Kubernetes bearer token.
	AuthToken = string(access.ModeToken)
)

// Defaults of Options.
const (
	DefaultListen     = "127.0.0.1:9080"
	DefaultSessionTTL = 8 * time.Hour
	// DefaultControllerNamespace is where deploy/ installs the
	// controllers.
	DefaultControllerNamespace = "plumb-system"
)

// The bounds of the server's connections. No legitimate request of the
// UI's is large or slow to send; an answer is a page of JSON. GET
// /api/live is exempt from WriteTimeout (it lasts as long as the page).
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 2 * time.Minute
	IdleTimeout       = 2 * time.Minute
)

// Options configure a Server.
type Options struct {
	// Listen is the address to listen on: "127.0.0.1:9080"
	// (DefaultListen), "127.0.0.1:0" for a free port, "fd:N" for an
	// inherited socket. In kubeconfig mode it must be a loopback address.
	// Empty, with no Listener, the server opens no socket: the caller
	// serves Handler itself (httptest.NewServer) and Run fails.
	Listen string
	// Listener, when set, is used instead of Listen.
	Listener net.Listener
	// Auth is AuthKubeconfig or AuthToken (the default).
	Auth string
	// Config is the server's identity: it watches the overview's kinds (kinds.All) with it
	// (and, in kubeconfig mode, acts for the user with it).
	Config *rest.Config
	// Scheme defaults to Plumb's (pkg/app.NewScheme).
	Scheme *runtime.Scheme
	// SessionTTL ends sessions, DefaultSessionTTL when zero.
	SessionTTL time.Duration
	// InsecureCookies leaves Secure off the token-mode session cookie.
	InsecureCookies bool
	// NATS is where the event stream is read from (package stream): URL,
	// Auth and Stream (options.DefaultStream when empty).
	NATS options.NATS
	// MaxEvents and MaxEventBytes bound the event history kept in memory
	// (--events-max, --events-max-bytes); zero takes stream's defaults.
	MaxEvents     int
	MaxEventBytes int64
	// ControllerNamespace is where Plumb's controllers run, for parts
	// that show them.
	ControllerNamespace string
	// LocalRenderController is the host:port of a render-controller on
	// this machine (its --storage-adv-addr) that rendered artifacts may
	// be downloaded from directly: e2e/localenv's. Empty in a cluster,
	// where only render-controller's Service in ControllerNamespace is
	// asked.
	LocalRenderController string
	// Parts are built after the built-in ones (tests, extensions).
	Parts []PartBuilder
	// Log defaults to a discarding logger.
	Log logr.Logger
}

// Server is a running UI server.
type Server struct {
	opts     Options
	gate     *access.Gate
	store    *overview.Store
	hub      *live.Hub
	parts    []Part
	listener net.Listener
	handler  http.Handler
	ctx      context.Context
}

// New checks opts, listens, builds the parts and fills the overview's
// cache from a watch with opts.Config; the watch lasts until ctx ends.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("server.Options.Config is required")
	}
	if opts.Auth == "" {
		opts.Auth = AuthToken
	}
	if opts.SessionTTL == 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.NATS.Stream == "" {
		opts.NATS.Stream = options.DefaultStream
	}
	if opts.Scheme == nil {
		opts.Scheme = app.NewScheme()
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.ControllerNamespace == "" {
		opts.ControllerNamespace = DefaultControllerNamespace
	}
	httpClient, err := rest.HTTPClientFor(opts.Config)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(opts.Config, httpClient)
	if err != nil {
		return nil, err
	}
	gate, err := access.New(access.Options{Mode: access.Mode(opts.Auth), Config: opts.Config, Scheme: opts.Scheme, Mapper: mapper,
		TTL: opts.SessionTTL, InsecureCookies: opts.InsecureCookies})
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, gate: gate, store: overview.NewStore(), hub: live.NewHub(), ctx: ctx}
	s.store.OnChange = s.hub.Publish

	if s.listener, err = s.listen(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	env := Env{Context: ctx, Options: opts, Config: opts.Config, Scheme: opts.Scheme, Mapper: mapper, Access: gate, Log: opts.Log}
	for _, build := range append(append([]PartBuilder(nil), builtinParts...), opts.Parts...) {
		p, err := build(env)
		if err != nil {
			return nil, err
		}
		s.parts = append(s.parts, p)
	}
	if err := overview.Watch(ctx, opts.Config, opts.Scheme, mapper, s.store); err != nil {
		return nil, err
	}
	for _, p := range s.parts {
		if p.Changes != nil {
			go s.hub.Forward(ctx, p.Changes)
		}
	}
	s.handler = s.routes()
	ok = true
	return s, nil
}

// listen opens the server's socket, if it has an address; kubeconfig mode
// only on loopback.
func (s *Server) listen() (net.Listener, error) {
	l := s.opts.Listener
	if l == nil && s.opts.Listen == "" {
		return nil, nil
	}
	if l == nil {
		var err error
		if l, err = listen.Listen(s.opts.Listen); err != nil {
			return nil, fmt.Errorf("listening on %s: %w", s.opts.Listen, err)
		}
	}
	if s.opts.Auth == AuthKubeconfig {
		tcp, isTCP := l.Addr().(*net.TCPAddr)
		if !isTCP || !tcp.IP.IsLoopback() {
			_ = l.Close()
			return nil, fmt.Errorf("--auth=kubeconfig serves the kubeconfig's user to whoever connects: listen on 127.0.0.1, not %s", l.Addr())
		}
	}
	return l, nil
}

// Handler is the server's whole HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Addr is the address the server listens on ("127.0.0.1:9080"), "" when
// it opened no socket.
func (s *Server) Addr() string {
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// URL is the server's address as a URL, with the host name the Host check
// of kubeconfig mode accepts; "/" when it opened no socket.
func (s *Server) URL() string {
	if s.listener == nil {
		return "/"
	}
	return "http://" + net.JoinHostPort(s.host(), strconv.Itoa(s.port())) + "/"
}

// LoginURL is, in kubeconfig mode, the address that signs the browser in
// with the current one-time secret (each use makes a new one, which the
// next call returns); in token mode, URL. Without a socket it is relative
// ("/#/?login=…"): prefix the address the caller serves Handler on.
func (s *Server) LoginURL() string {
	if secret := s.gate.LoginSecret(); secret != "" {
		return s.URL() + "#/?login=" + secret
	}
	return s.URL()
}

// LoginSecret is the current one-time login secret of kubeconfig mode.
func (s *Server) LoginSecret() string { return s.gate.LoginSecret() }

// port is the port listened on, 0 without a TCP socket.
func (s *Server) port() int {
	if s.listener == nil {
		return 0
	}
	if tcp, ok := s.listener.Addr().(*net.TCPAddr); ok {
		return tcp.Port
	}
	return 0
}

func (s *Server) host() string {
	if tcp, ok := s.listener.Addr().(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		if tcp.IP.IsLoopback() && tcp.IP.To4() == nil {
			return "localhost" // ::1: the Host check accepts localhost
		}
		return tcp.IP.String()
	}
	return "127.0.0.1"
}

// Run serves until ctx ends, then stops accepting, lets requests in
// flight finish (at most 10 s; open event streams are cut) and closes the
// parts.
func (s *Server) Run(ctx context.Context) error {
	if s.listener == nil {
		return errors.New("the server has no address to serve on: set Options.Listen")
	}
	defer s.Close()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(s.listener) }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-errs; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close releases the socket and the parts; Run calls it as it returns. A
// caller that serves Handler itself calls it when done.
func (s *Server) Close() {
	if s.listener != nil {
		_ = s.listener.Close()
	}
	for _, p := range s.parts {
		if p.Close != nil {
			p.Close()
		}
	}
}
