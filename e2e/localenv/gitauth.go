package localenv

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// Pushes to a repository with credentials (SetPushCredentials) need them,
// as a Git host asks a bot or a person for theirs: an
// ImageUpdateAutomation then writes with its GitRepository's Secret, and
// without it is refused (the 401 a host answers). Fetches stay anonymous,
// as from a public repository. The user of each accepted push is kept
// (Pushers), so a test can tell who wrote a commit.

// PushCredentials are a repository's user and password for pushes.
type PushCredentials struct {
	Username, Password string
}

// SetPushCredentials makes pushes to repo need c (HTTP basic auth).
func (s *GitServer) SetPushCredentials(repo string, c PushCredentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushCreds[repo] = c
}

// PushURL is repo's clone URL with its push credentials in it, for the
// git binary; without credentials, URL.
func (s *GitServer) PushURL(repo string) string {
	s.mu.Lock()
	c, ok := s.pushCreds[repo]
	s.mu.Unlock()
	if !ok {
		return s.URL(repo)
	}
	u, err := url.Parse(s.URL(repo))
	if err != nil {
		return s.URL(repo)
	}
	u.User = url.UserPassword(c.Username, c.Password)
	return u.String()
}

// Pushers returns the user of each push to repo accepted so far, in
// order ("" for an anonymous one).
func (s *GitServer) Pushers(repo string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pushers[repo]...)
}

// isPush says whether r is a step of a push: the ref advertisement of
// git-receive-pack or the pack itself.
func isPush(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/git-receive-pack") ||
		strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-receive-pack"
}

// authorizePush answers 401 (with a Basic challenge, so the git binary
// sends the URL's credentials) unless repo takes anonymous pushes or r
// carries its credentials. It returns the user and whether to go on.
func (s *GitServer) authorizePush(w http.ResponseWriter, r *http.Request, repo string) (string, bool) {
	s.mu.Lock()
	want, ok := s.pushCreds[repo]
	s.mu.Unlock()
	user, pass, given := r.BasicAuth()
	if !ok {
		return user, true
	}
	if given && subtle.ConstantTimeCompare([]byte(user), []byte(want.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(want.Password)) == 1 {
		return user, true
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="plumb-local git"`)
	http.Error(w, "pushes to "+repo+" need its credentials", http.StatusUnauthorized)
	return "", false
}
