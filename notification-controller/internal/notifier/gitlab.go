package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// GitLab's commit statuses: POST /api/v4/projects/{id}/statuses/{sha},
// the project id being its URL-encoded path (group/subgroup/project),
// authenticated with the PRIVATE-TOKEN header (a personal, group or
// project access token with the api scope).

const gitlabForm = "https://<host>/<group>[/<subgroup>...]/<project>"

// maxStatusDescription bounds the description on the hosts that document
// no limit of their own: a status is a line, not a log.
const maxStatusDescription = 255

func newGitLab(cfg Config) (Notifier, error) {
	g, err := newGitLabProject(cfg)
	if err != nil {
		return nil, err
	}
	return &commitStatusNotifier{cfg: cfg, host: &g}, nil
}

// newGitLabProject checks the address and token of both gitlab types.
func newGitLabProject(cfg Config) (gitlab, error) {
	repo, err := parseRepository(cfg, gitlabForm)
	if err != nil {
		return gitlab{}, err
	}
	if len(repo.segments) < 2 {
		return gitlab{}, errWrongForm(cfg.Type, gitlabForm)
	}
	if cfg.Token == "" {
		return gitlab{}, needToken(cfg.Type, gitlabToken)
	}
	escaped := make([]string, len(repo.segments))
	for i, s := range repo.segments {
		escaped[i] = url.PathEscape(s)
	}
	return gitlab{cfg: cfg, root: repo.api("/api/v4"), project: repo.api("/api/v4/projects/" + strings.Join(escaped, "%2F"))}, nil
}

// gitlab is a GitLab project and the API that serves it.
type gitlab struct {
	cfg Config
	// root is the API's URL (https://<host>/api/v4), project the
	// project's, root + /projects/{url-encoded path}.
	root, project string
}

// gitlabStatus is the body of "set the pipeline status of a commit", and
// what "list the statuses of a commit" answers (of which only these
// fields are read).
type gitlabStatus struct {
	ID          int64  `json:"id,omitempty"`
	State       string `json:"state,omitempty"`
	Status      string `json:"status,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

var gitlabStates = map[statusState]string{stateSuccess: "success", stateFailure: "failed", statePending: "running"}

func (g *gitlab) auth() http.Header { return authHeader("PRIVATE-TOKEN", g.cfg.Token) }

// shows reads the commit's statuses of st's name: GitLab refuses (400)
// to move a status to the state it is in.
func (g *gitlab) shows(ctx context.Context, st commitStatus) bool {
	want := g.status(st)
	var current []gitlabStatus
	err := call(ctx, g.cfg, hostCall{
		method: http.MethodGet,
		url:    g.project + "/repository/commits/" + st.sha + "/statuses?name=" + url.QueryEscape(st.context),
		auth:   g.auth(),
		into:   &current,
	})
	if err != nil {
		return false
	}
	// The newest status of this name (highest id; the list's order
	// is a query option) is what the commit shows.
	var shown *gitlabStatus
	for i, s := range current {
		if s.Name == want.Name && (shown == nil || s.ID > shown.ID) {
			shown = &current[i]
		}
	}
	return shown != nil && shown.Status == want.State && shown.Description == want.Description
}

func (g *gitlab) status(st commitStatus) gitlabStatus {
	return gitlabStatus{State: gitlabStates[st.state], Name: st.context, Description: clipRunes(st.description, maxStatusDescription)}
}

func (g *gitlab) post(ctx context.Context, st commitStatus) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPost, url: g.project + "/statuses/" + st.sha, auth: g.auth(), body: g.status(st)})
}
