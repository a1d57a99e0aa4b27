package testgit

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. Empty credentials mean anonymous access.
type Options struct {
	// Username and Password, when set, are required as HTTP basic auth.
	Username string
	Password string
	// BearerToken, when set, is accepted as "Authorization: Bearer <token>"
	// (alone or besides basic auth).
	BearerToken string
	// Push serves git-receive-pack over HTTP and SSH, so clients can push (a
	// bootstrap writing its manifests); off, a push is refused with 403.
	Push bool
	// TLS, when set, serves HTTPS with it (its certificate for
	// 127.0.0.1, made by the test with a CA of its own) instead of plain
	// HTTP.
	TLS *tls.Config
}

// Server serves the repositories under a temporary folder over HTTP and,
// after StartSSH, over SSH.
type Server struct {
	opts Options
	root string
	git  string
	http *http.Server
	ln   net.Listener

	mu      sync.Mutex
	fetches map[string]int
	lists   map[string]int
	pushes  map[string]int
	// pushOptions are the options of each repository's last push.
	pushOptions map[string][]string
	// beforePush is BeforePush's hook.
	beforePush func(repo string, push int)

	ssh *sshServer
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewServer starts the HTTP server on 127.0.0.1 and a random port. It needs
// the git binary on PATH.
func NewServer(opts Options) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("testgit needs the git binary: %w", err)
	}
	root, err := os.MkdirTemp("", "plumb-testgit-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	s := &Server{opts: opts, root: root, git: git, ln: ln, fetches: map[string]int{}, lists: map[string]int{}, pushes: map[string]int{}}
	s.http = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	if opts.TLS != nil {
		// Refused handshakes are what TLS tests are about, not noise
		// for stderr.
		s.http.ErrorLog = log.New(io.Discard, "", 0)
	}
	go s.http.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// HTTPAddress returns http://127.0.0.1:<port>, or https:// with
// Options.TLS.
func (s *Server) HTTPAddress() string {
	if s.opts.TLS != nil {
		return "https://" + s.ln.Addr().String()
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops the servers and removes the repositories.
func (s *Server) Close() error {
	errs := []error{s.http.Close()}
	if s.ssh != nil {
		errs = append(errs, s.ssh.close())
	}
	errs = append(errs, os.RemoveAll(s.root))
	return errors.Join(errs...)
}

// Fetches returns how many pack negotiations (clones and fetches) the
// repository served over HTTP and SSH.
func (s *Server) Fetches(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[name]
}

// Lists returns how many reference advertisements (GET info/refs, which
// both ls-remote and a clone start with) the repository served over HTTP.
func (s *Server) Lists(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists[name]
}

// Pushes returns how many pushes (POST git-receive-pack) the repository
// served; always 0 without Options.Push.
func (s *Server) Pushes(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes[name]
}

// count adds one to m[name] and returns the new count.
func (s *Server) count(m map[string]int, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m[name]++
	return m[name]
}

func (s *Server) handler() http.Handler {
	env := []string{
		"GIT_PROJECT_ROOT=" + s.root,
		"GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"HOME=" + s.root,
	}
	if s.opts.Push {
		// http-backend serves receive-pack only to an authenticated user
		// unless http.receivepack says so; the handler checks the
		// credentials itself.
		// It advertises push-options, which PushOptions records.
		env = append(env, "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=receive.advertisePushOptions", "GIT_CONFIG_VALUE_1=true")
	}
	backend := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Dir:  s.root,
		// http-backend's complaints (e.g. a missing repository) reach the
		// client as HTTP statuses already.
		Stderr: io.Discard,
		Env:    env,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="testgit"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		// Pushing is served only with Options.Push; tests otherwise write
		// through Repo.
		push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
		if push && !s.opts.Push {
			http.Error(w, "push is not served", http.StatusForbidden)
			return
		}
		name := strings.TrimSuffix(strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0], ".git")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
			n := s.count(s.pushes, name)
			if err := s.recordPushOptions(r, name); err != nil {
				http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
				return
			}
			s.runBeforePush(name, n)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			s.count(s.fetches, name)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
			s.count(s.lists, name)
		}
		backend.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Username == "" && s.opts.Password == "" && s.opts.BearerToken == "" {
		return true
	}
	if s.opts.BearerToken != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.BearerToken)) == 1
		}
	}
	if s.opts.Username == "" && s.opts.Password == "" {
		return false
	}
	u, p, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u), []byte(s.opts.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(p), []byte(s.opts.Password)) == 1
}

// repoDir returns the folder of a repository name.
func (s *Server) repoDir(name string) string { return filepath.Join(s.root, name+".git") }
