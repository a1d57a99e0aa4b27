package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Gitea's (and Forgejo's) commit statuses: POST
// /api/v1/repos/{owner}/{repo}/statuses/{sha}, authenticated with
// "Authorization: token <token>". Gitea may be served under a path
// (https://host/git/owner/repo): what comes before owner/repo is its root.

const giteaForm = "https://<host>[/<root>]/<owner>/<repo>"

func newGitea(cfg Config) (Notifier, error) {
	g, err := newGiteaRepo(cfg, giteaToken)
	if err != nil {
		return nil, err
	}
	return &commitStatusNotifier{cfg: cfg, host: &g}, nil
}

// newGiteaRepo checks the address and token of both gitea types; token
// says what the token must be allowed, for the error when it is missing.
func newGiteaRepo(cfg Config, token string) (gitea, error) {
	repo, err := parseRepository(cfg, giteaForm)
	if err != nil {
		return gitea{}, err
	}
	n := len(repo.segments)
	if n < 2 {
		return gitea{}, errWrongForm(cfg.Type, giteaForm)
	}
	if cfg.Token == "" {
		return gitea{}, needToken(cfg.Type, token)
	}
	prefix := ""
	if n > 2 {
		prefix = "/" + strings.Join(repo.segments[:n-2], "/")
	}
	root := repo.api(prefix + "/api/v1")
	return gitea{cfg: cfg, root: root, api: root + "/repos/" + url.PathEscape(repo.segments[n-2]) + "/" + url.PathEscape(repo.segments[n-1])}, nil
}

// gitea is a Gitea repository and the API that serves it.
type gitea struct {
	cfg Config
	// root is the API's URL (https://<host>[/<root>]/api/v1), api the
	// repository's, root + /repos/{owner}/{repo}.
	root, api string
}

// giteaStatus is the body of "create a commit status".
type giteaStatus struct {
	State       string `json:"state"`
	Description string `json:"description,omitempty"`
	Context     string `json:"context"`
}

var giteaStates = map[statusState]string{stateSuccess: "success", stateFailure: "failure", statePending: "pending"}

func (g *gitea) auth() http.Header { return authHeader("Authorization", "token "+g.cfg.Token) }

func (g *gitea) status(st commitStatus) giteaStatus {
	return giteaStatus{State: giteaStates[st.state], Description: clipRunes(st.description, maxStatusDescription), Context: st.context}
}

func (g *gitea) post(ctx context.Context, st commitStatus) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPost, url: g.api + "/statuses/" + st.sha, auth: g.auth(), body: g.status(st)})
}

// shows reads the commit's combined status (GET
// /repos/{owner}/{repo}/commits/{sha}/status).
func (g *gitea) shows(ctx context.Context, st commitStatus) bool {
	want := g.status(st)
	return combinedShows(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.api + "/commits/" + st.sha + "/status?limit=50", auth: g.auth()},
		shownStatus{want.Context, want.State, want.Description})
}
