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

// Server serves a Storage over HTTP. It is a controller-runtime Runnable
// that runs on the leader only, as the leader is the replica that writes
// the storage.
type Server struct {
	addr    string
	storage *Storage

	mu sync.Mutex
	ln net.Listener
}

// NewServer returns a server of st on addr (host:port; ":0" picks a port).
func NewServer(addr string, st *Storage) *Server {
	return &Server{addr: addr, storage: st}
}

// Listen binds the address now, so the caller learns the port before Start;
// Start calls it when the caller did not.
func (s *Server) Listen() (net.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr(), nil
	}
	ln, err := net.Listen("tcp", s.addr)
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
	srv := &http.Server{
		Handler:           s.storage.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return err
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// NeedLeaderElection makes the manager run the server on the leader only.
func (s *Server) NeedLeaderElection() bool { return true }
