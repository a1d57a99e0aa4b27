package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// Bitbucket Cloud's build statuses: POST
// https://api.bitbucket.org/2.0/repositories/{workspace}/{repo}/commit/{sha}/statuses/build,
// HTTP Basic authentication with the token "<username>:<app password>"
// (Flux's form; an Atlassian API token goes as "<email>:<token>").
//
// Bitbucket Data Center (bitbucketserver): POST
// {base}/rest/api/latest/projects/{project}/repos/{repo}/commits/{sha}/builds,
// with an HTTP access token (Bearer), or the Secret's username and
// password (Basic).

const (
	bitbucketForm       = "https://bitbucket.org/<workspace>/<repo>"
	bitbucketServerForm = "https://<host>[/<context>]/scm/<project>/<repo>.git"
	// maxBitbucketKey is Bitbucket Cloud's limit on a status key.
	maxBitbucketKey = 40
)

// bitbucketStatus is the body of both Bitbucket's build statuses.
type bitbucketStatus struct {
	Key         string `json:"key"`
	State       string `json:"state"`
	URL         string `json:"url"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

var bitbucketStates = map[statusState]string{stateSuccess: "SUCCESSFUL", stateFailure: "FAILED", statePending: "INPROGRESS"}

func newBitbucket(cfg Config) (Notifier, error) {
	repo, err := parseRepository(cfg, bitbucketForm)
	if err != nil {
		return nil, err
	}
	if len(repo.segments) != 2 {
		return nil, errWrongForm(cfg.Type, bitbucketForm)
	}
	user, password, ok := strings.Cut(cfg.Token, ":")
	if !ok || user == "" || password == "" {
		return nil, needToken(cfg.Type, bitbucketToken)
	}
	// bitbucket.org's API is api.bitbucket.org; another host (a proxy, a
	// stand-in) is taken to serve the API itself.
	base := repo.api("")
	if strings.EqualFold(repo.base.Hostname(), "bitbucket.org") {
		base = "https://api.bitbucket.org"
	}
	commits := base + "/2.0/repositories/" + url.PathEscape(repo.segments[0]) + "/" + url.PathEscape(repo.segments[1]) + "/commit/"
	return &commitStatusNotifier{cfg: cfg, host: &bitbucket{
		cfg: cfg, web: repo.web, auth: basicAuth(user, password),
		url: func(sha string) string { return commits + sha + "/statuses/build" },
		// A context may be longer than Bitbucket Cloud's key: the key is
		// a hash of it, the name the context itself.
		key: func(context string) string {
			sum := sha256.Sum256([]byte(context))
			return hex.EncodeToString(sum[:])[:maxBitbucketKey]
		},
	}}, nil
}

func newBitbucketServer(cfg Config) (Notifier, error) {
	repo, err := parseRepository(cfg, bitbucketServerForm)
	if err != nil {
		return nil, err
	}
	// The clone URL's path is [/<context>]/scm/<project>/<repo>.
	n := len(repo.segments)
	if n < 3 || !strings.EqualFold(repo.segments[n-3], "scm") {
		return nil, errWrongForm(cfg.Type, bitbucketServerForm)
	}
	auth := authHeader("Authorization", "Bearer "+cfg.Token)
	switch {
	case cfg.Token != "":
	case cfg.User != "" && cfg.Password != "":
		auth = basicAuth(cfg.User, cfg.Password)
	default:
		return nil, needToken(cfg.Type, "an HTTP access token, or the keys username and password")
	}
	root := ""
	if n > 3 {
		root = "/" + strings.Join(repo.segments[:n-3], "/")
	}
	commits := repo.api(root + "/rest/api/latest/projects/" + url.PathEscape(repo.segments[n-2]) + "/repos/" + url.PathEscape(repo.segments[n-1]) + "/commits/")
	return &commitStatusNotifier{cfg: cfg, host: &bitbucket{
		cfg: cfg, web: repo.web, auth: auth,
		url: func(sha string) string { return commits + sha + "/builds" },
		key: func(context string) string { return context },
	}}, nil
}

// bitbucket posts build statuses to Bitbucket Cloud or Data Center: the
// same body, different paths and keys.
type bitbucket struct {
	cfg  Config
	web  string
	auth http.Header
	url  func(sha string) string
	key  func(context string) string
}

func (b *bitbucket) post(ctx context.Context, st commitStatus) error {
	return call(ctx, b.cfg, hostCall{
		method: http.MethodPost,
		url:    b.url(st.sha),
		auth:   b.auth,
		body: bitbucketStatus{
			Key:         b.key(st.context),
			State:       bitbucketStates[st.state],
			URL:         b.web,
			Name:        st.context,
			Description: clipRunes(st.description, maxStatusDescription),
		},
	})
}
