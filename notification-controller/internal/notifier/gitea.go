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
	repo, err := parseRepository(cfg, giteaForm)
	if err != nil {
		return nil, err
	}
	n := len(repo.segments)
	if n < 2 {
		return nil, errWrongForm(cfg.Type, giteaForm)
	}
	if cfg.Token == "" {
		return nil, needToken(cfg.Type, giteaToken)
	}
	root := ""
	if n > 2 {
		root = "/" + strings.Join(repo.segments[:n-2], "/")
	}
	api := repo.api(root + "/api/v1/repos/" + url.PathEscape(repo.segments[n-2]) + "/" + url.PathEscape(repo.segments[n-1]))
	return &commitStatusNotifier{cfg: cfg, host: &gitea{cfg: cfg, api: api}}, nil
}

type gitea struct {
	cfg Config
	api string
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
