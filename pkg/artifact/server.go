package artifact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"plumb.dev/pkg/listen"
)

// Handler returns the read-only HTTP handler of the storage: GET and HEAD of
// files, with byte ranges; 404 for folders, temporary and hidden files, and
// anything outside the root; 405 for other methods.
func (s *Storage) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rel := path.Clean("/" + r.URL.Path)
		for _, part := range strings.Split(rel, "/") {
			// Hidden names cover temporary files (.tmp-*) and anything an
			// operator keeps beside the artifacts.
			if strings.HasPrefix(part, ".") {
				http.NotFound(w, r)
				return
			}
		}
		f, err := os.Open(s.LocalPath(rel))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType(rel))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// ServeContent answers HEAD, Range, If-Range and If-Modified-Since.
		http.ServeContent(w, r, "", fi.ModTime(), f)
	})
}

func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		return "application/gzip"
	case strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
		return "application/yaml"
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// Defaults of the server's bounds (see ServerOption). They assume clients
// in the same cluster: the other Plumb controllers downloading artifacts of
// at most DefaultMaxArchiveBytes (100 MiB).
const (
	// DefaultReadHeaderTimeout bounds the time to send the request line and
	// headers: a few hundred bytes that take milliseconds; 10s is slack for
	// a loaded node while a client trickling bytes (slowloris) is cut off.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the whole request. Requests are GET or HEAD
	// without a body, so this only adds a little to the header timeout.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the whole response, from the end of the
	// request to the last byte. Five minutes serve the largest artifact
	// (100 MiB) to a client reading at 350 KiB/s, a thirtieth of a modest
	// 10 MiB/s between two pods, so only a client far slower than any
	// healthy one is cut off, and it gives back its connection slot.
	DefaultWriteTimeout = 5 * time.Minute
	// DefaultIdleTimeout closes a keep-alive connection left unused; the
	// controllers download once per revision, so reuse after a minute is
	// rare, and an idle connection holds a slot of MaxConnections.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxConnections bounds the connections served at once, idle
	// keep-alive ones included. A few controllers with --concurrent workers
	// each need a handful; 256 leaves room for many replicas while keeping
	// the server's file descriptors well under the common soft limit of
	// 1024, so a flood cannot starve the controller's own API connections.
	// Connections beyond it wait in the kernel's accept queue.
	DefaultMaxConnections = 256
)

// serverOptions are the bounds of a Server.
type serverOptions struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	maxConnections    int
	// extra are handlers served beside the files, by exact path.
	extra map[string]http.Handler
}

// ServerOption changes a bound of a Server. A zero or negative value keeps
// the default: the server never runs without timeouts or a connection cap.
type ServerOption func(*serverOptions)

// WithReadHeaderTimeout bounds the time a client takes to send a request's
// headers (http.Server.ReadHeaderTimeout).
func WithReadHeaderTimeout(d time.Duration) ServerOption {
	return func(o *serverOptions) { setPositive(&o.readHeaderTimeout, d) }
}

// WithReadTimeout bounds the time a client takes to send a whole request
// (http.Server.ReadTimeout).
func WithReadTimeout(d time.Duration) ServerOption {
	return func(o *serverOptions) { setPositive(&o.readTimeout, d) }
}

// WithWriteTimeout bounds the time to send a whole response
// (http.Server.WriteTimeout); it must allow the largest artifact to reach
// the slowest legitimate client.
func WithWriteTimeout(d time.Duration) ServerOption {
	return func(o *serverOptions) { setPositive(&o.writeTimeout, d) }
}

// WithIdleTimeout bounds the time a keep-alive connection waits for its
// next request (http.Server.IdleTimeout).
func WithIdleTimeout(d time.Duration) ServerOption {
	return func(o *serverOptions) { setPositive(&o.idleTimeout, d) }
}

// WithMaxConnections bounds the connections served at once; further ones
// wait to be accepted until one closes.
func WithMaxConnections(n int) ServerOption {
	return func(o *serverOptions) { setPositive(&o.maxConnections, n) }
}

// WithHandler serves h at the exact path p beside the files, under the
// same listener, timeouts and connection cap (render-controller's render
// feed, pkg/renderfeed); p must not be a path of the storage's files. A
// handler with a Shutdown method is told when the server shuts down, so
// that a stream it serves ends rather than hold the shutdown.
func WithHandler(p string, h http.Handler) ServerOption {
	return func(o *serverOptions) {
		if o.extra == nil {
			o.extra = map[string]http.Handler{}
		}
		o.extra[p] = h
	}
}

func setPositive[T time.Duration | int](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// Server serves a Storage over HTTP. It is a controller-runtime Runnable
// that runs on the leader only, as the leader is the replica that writes
// the storage.
type Server struct {
	addr    string
	storage *Storage
	opts    serverOptions

	mu      sync.Mutex
	ln      net.Listener
	serving bool
}

// NewServer returns a server of st on addr (host:port, ":0" picks a port;
// or fd:N, a listening socket inherited as file descriptor N, see
// plumb.dev/pkg/listen),
// with the default bounds changed by opts.
func NewServer(addr string, st *Storage, opts ...ServerOption) *Server {
	o := serverOptions{
		readHeaderTimeout: DefaultReadHeaderTimeout,
		readTimeout:       DefaultReadTimeout,
		writeTimeout:      DefaultWriteTimeout,
		idleTimeout:       DefaultIdleTimeout,
		maxConnections:    DefaultMaxConnections,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return &Server{addr: addr, storage: st, opts: o}
}

// Listen binds the address now, so the caller learns the port before Start;
// Start calls it when the caller did not.
func (s *Server) Listen() (net.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr(), nil
	}
	ln, err := listen.Listen(s.addr)
	if err != nil {
		return nil, fmt.Errorf("listening for artifact requests on %s: %w", s.addr, err)
	}
	s.ln = ln
	return ln.Addr(), nil
}

// Start serves until ctx is done, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	if _, err := s.Listen(); err != nil {
		return err
	}
	files := s.storage.Handler()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := s.opts.extra[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: s.opts.readHeaderTimeout,
		ReadTimeout:       s.opts.readTimeout,
		WriteTimeout:      s.opts.writeTimeout,
		IdleTimeout:       s.opts.idleTimeout,
	}
	for _, h := range s.opts.extra {
		if sd, ok := h.(interface{ Shutdown() }); ok {
			srv.RegisterOnShutdown(sd.Shutdown)
		}
	}
	unused := &unusedConns{conns: map[net.Conn]struct{}{}}
	srv.ConnState = unused.track
	srv.RegisterOnShutdown(unused.closeAll)
	errc := make(chan error, 1)
	// The listener is bound: a connection made from now on is served.
	s.setServing(true)
	defer s.setServing(false)
	go func() { errc <- srv.Serve(netutil.LimitListener(s.ln, s.opts.maxConnections)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Requests being served are finished; idle connections and those
		// that never sent a request are closed at once.
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return err
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// unusedConns are the connections that have not sent a request yet, which
// a stop closes at once. net/http's Shutdown closes idle keep-alive
// connections at once but waits for such a connection until it is five
// seconds old, as it may be about to send its first request; a client's
// pool of connections dialled ahead (an HTTP client's, a proxy's) or a TCP
// probe keeps one open for nothing, and it held render-controller's stop
// for up to five seconds after a fleet sync (docs/bench/fleet.md,
// "Fleet runs K1–K3"). A request that was on its way on one fails as if
// it had come a moment after the stop, when nothing listens.
type unusedConns struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	stopped bool
}

// track is the server's ConnState hook.
func (u *unusedConns) track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(u.conns, c)
	case u.stopped:
		// Accepted as the listener closed.
		_ = c.Close()
	default:
		u.conns[c] = struct{}{}
	}
}

// closeAll closes the unused connections, and any accepted from now on;
// Shutdown calls it once its listener is closed.
func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopped = true
	for c := range u.conns {
		_ = c.Close()
	}
	clear(u.conns)
}

func (s *Server) setServing(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = v
}

// Ready is a readiness check (a controller-runtime healthz.Checker): nil
// while Start serves, an error before and after. The server runs on the
// leader only, so on any other replica it is never ready.
func (s *Server) Ready(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.serving {
		return errors.New("not serving artifacts: this replica is not the leader, or the artifact server has not started")
	}
	return nil
}

// NeedLeaderElection makes the manager run the server on the leader only.
func (s *Server) NeedLeaderElection() bool { return true }
