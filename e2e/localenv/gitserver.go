package localenv

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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

// GitServer serves bare repositories over Git's smart HTTP protocol with
// `git http-backend`, push included, and after each push sends a GitHub-style
// push webhook, signed with X-Hub-Signature-256, to the URLs registered for
// the repository, as a Git host would. Pushes to a repository given
// credentials need them (gitauth.go).
type GitServer struct {
	root string
	git  string
	ln   net.Listener
	srv  *http.Server
	log  io.Writer

	// advertised is the host:port the clone URLs name when it is not
	// the listener's (advertiseOnBridge).
	advertised string

	mu         sync.Mutex
	pushLocks  map[string]*sync.Mutex
	hooks      map[string][]Webhook
	deliveries []Delivery
	pushCreds  map[string]PushCredentials
	pushers    map[string][]string
	wg         sync.WaitGroup
}

// Webhook is where a repository's pushes are announced, and the secret the
// payload is signed with.
type Webhook struct {
	URL    string
	Secret string
}

// Delivery records one webhook call.
type Delivery struct {
	Repo   string
	URL    string
	Ref    string
	After  string
	Status int
	Body   string
	Err    error
	At     time.Time
}

var gitRepoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// newGitServer serves the repositories under root on 127.0.0.1.
func newGitServer(root string, log io.Writer) (*GitServer, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the Git server needs the git binary: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &GitServer{root: root, git: git, ln: ln, log: log, pushLocks: map[string]*sync.Mutex{}, hooks: map[string][]Webhook{},
		pushCreds: map[string]PushCredentials{}, pushers: map[string][]string{}}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Address returns http://127.0.0.1:<port>, or the bridge's address when
// Plumb runs as a real node's Pods (advertiseOnBridge).
func (s *GitServer) Address() string {
	if s.advertised != "" {
		return "http://" + s.advertised
	}
	return "http://" + s.ln.Addr().String()
}

// URL returns a repository's clone URL.
func (s *GitServer) URL(repo string) string { return s.Address() + "/" + repo + ".git" }

// Close stops serving and waits for webhook deliveries in flight.
func (s *GitServer) Close() error {
	err := s.srv.Close()
	s.wg.Wait()
	return err
}

// CreateRepo creates an empty bare repository that accepts pushes.
func (s *GitServer) CreateRepo(ctx context.Context, name string) error {
	if !gitRepoName.MatchString(name) {
		return fmt.Errorf("invalid repository name %q", name)
	}
	dir := filepath.Join(s.root, name+".git")
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("repository %s exists", name)
	}
	if _, err := runGit(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", dir); err != nil {
		return err
	}
	// http-backend refuses anonymous pushes unless the repository says so.
	_, err := runGit(ctx, dir, "config", "http.receivepack", "true")
	return err
}

// AddWebhook announces every push to repo to hook.
func (s *GitServer) AddWebhook(repo string, hook Webhook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[repo] = append(s.hooks[repo], hook)
}

// Deliveries returns the webhook calls made for repo so far.
func (s *GitServer) Deliveries(repo string) []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Delivery
	for _, d := range s.deliveries {
		if d.Repo == repo {
			out = append(out, d)
		}
	}
	return out
}

func (s *GitServer) handler() http.Handler {
	backend := &cgi.Handler{
		Path:   s.git,
		Args:   []string{"http-backend"},
		Dir:    s.root,
		Stderr: io.Discard,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.root,
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo := strings.TrimSuffix(strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0], ".git")
		var user string
		if isPush(r) {
			var ok bool
			if user, ok = s.authorizePush(w, r, repo); !ok {
				return
			}
		}
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") || !gitRepoName.MatchString(repo) {
			backend.ServeHTTP(w, r)
			return
		}
		// A push: note the branches before and after, then announce
		// each one that moved.
		lock := s.pushLock(repo)
		lock.Lock()
		defer lock.Unlock()
		dir := filepath.Join(s.root, repo+".git")
		before, _ := listRefs(r.Context(), dir)
		backend.ServeHTTP(w, r)
		after, err := listRefs(r.Context(), dir)
		if err != nil {
			return
		}
		if !maps.Equal(before, after) {
			s.mu.Lock()
			s.pushers[repo] = append(s.pushers[repo], user)
			s.mu.Unlock()
		}
		for ref, sha := range after {
			if before[ref] != sha {
				s.announce(repo, ref, before[ref], sha)
			}
		}
	})
}

func (s *GitServer) pushLock(repo string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.pushLocks[repo]
	if !ok {
		l = &sync.Mutex{}
		s.pushLocks[repo] = l
	}
	return l
}

func listRefs(ctx context.Context, dir string) (map[string]string, error) {
	out, err := runGit(ctx, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if ref, sha, ok := strings.Cut(line, " "); ok {
			refs[ref] = sha
		}
	}
	return refs, nil
}

// announce sends the push event to the repository's webhooks in the
// background, as a Git host does after answering the push.
func (s *GitServer) announce(repo, ref, before, after string) {
	s.mu.Lock()
	hooks := append([]Webhook(nil), s.hooks[repo]...)
	s.mu.Unlock()
	if before == "" {
		before = strings.Repeat("0", 40)
	}
	payload, _ := json.Marshal(map[string]any{
		"ref":    ref,
		"before": before,
		"after":  after,
		"repository": map[string]any{
			"name": repo, "full_name": "local/" + repo, "clone_url": s.URL(repo),
		},
		"pusher":      map[string]any{"name": "local"},
		"head_commit": map[string]any{"id": after},
	})
	for _, h := range hooks {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			d := Delivery{Repo: repo, URL: h.URL, Ref: ref, After: after, At: time.Now()}
			d.Status, d.Body, d.Err = SendGitHubEvent(context.Background(), h.URL, h.Secret, "push", payload)
			if d.Err != nil {
				fmt.Fprintf(s.log, "git server: webhook for %s %s: %v\n", repo, ref, d.Err)
			}
			s.mu.Lock()
			s.deliveries = append(s.deliveries, d)
			s.mu.Unlock()
		}()
	}
}

// SendGitHubEvent POSTs payload to url as GitHub sends a webhook: the event
// name in X-GitHub-Event and the body's HMAC-SHA256 under secret in
// X-Hub-Signature-256. It returns the response status and body.
func SendGitHubEvent(ctx context.Context, url, secret, event string, payload []byte) (int, string, error) {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/plumb-local")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", hex.EncodeToString(id))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	// The receiver may be a Service's cluster IP (receiverURL).
	resp, err := ServiceHTTPClient(0).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 300 {
		return resp.StatusCode, string(body), fmt.Errorf("webhook answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.StatusCode, string(body), nil
}

// Clone is a working copy made with the git binary, as a person would use
// one: clone, edit, commit, push over HTTP.
type Clone struct {
	Dir string
	URL string
}

// CloneRepo clones url into dir with the git binary.
func CloneRepo(ctx context.Context, url, dir string) (*Clone, error) {
	if _, err := runGit(ctx, "", "clone", "--quiet", url, dir); err != nil {
		return nil, err
	}
	return &Clone{Dir: dir, URL: url}, nil
}

// InitClone starts a working copy of an empty repository at url in dir.
func InitClone(ctx context.Context, url, dir string) (*Clone, error) {
	if _, err := runGit(ctx, "", "init", "--quiet", "--initial-branch=main", dir); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, dir, "remote", "add", "origin", url); err != nil {
		return nil, err
	}
	return &Clone{Dir: dir, URL: url}, nil
}

// Write writes files (slash-separated paths relative to the working copy).
func (c *Clone) Write(files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(c.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Read returns a file's content.
func (c *Clone) Read(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(name)))
	return string(b), err
}

// Remove deletes files from the working copy.
func (c *Clone) Remove(names ...string) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(c.Dir, filepath.FromSlash(name))); err != nil {
			return err
		}
	}
	return nil
}

// CommitAndPush commits every change in the working copy and pushes the
// branch main; it returns the new commit's hash.
func (c *Clone) CommitAndPush(ctx context.Context, message string) (string, error) {
	if _, err := runGit(ctx, c.Dir, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := runGit(ctx, c.Dir, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	if _, err := runGit(ctx, c.Dir, "push", "--quiet", "origin", "HEAD:refs/heads/main"); err != nil {
		return "", err
	}
	return c.Head(ctx)
}

// Pull brings the working copy's main up to the server's (commits pushed
// by someone else, a bootstrap's).
func (c *Clone) Pull(ctx context.Context) error {
	_, err := runGit(ctx, c.Dir, "pull", "--quiet", "origin", "main")
	return err
}

// Head returns the commit hash the working copy is at.
func (c *Clone) Head(ctx context.Context) (string, error) {
	sha, err := runGit(ctx, c.Dir, "rev-parse", "HEAD")
	return strings.TrimSpace(sha), err
}

// runGit runs the git binary with an environment that ignores the user's
// and the system's configuration.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Plumb Local", "GIT_AUTHOR_EMAIL=local@plumb.dev",
		"GIT_COMMITTER_NAME=Plumb Local", "GIT_COMMITTER_EMAIL=local@plumb.dev",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New("git " + strings.Join(args, " ") + ": " + msg)
	}
	return stdout.String(), nil
}
