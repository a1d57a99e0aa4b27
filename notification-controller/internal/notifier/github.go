package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// GitHub's commit statuses (POST /repos/{owner}/{repo}/statuses/{sha}) and
// repository_dispatch events (POST /repos/{owner}/{repo}/dispatches).
// Plain net/http: two calls with three fields each do not need go-github
// and its oauth2 transport, which would also bypass the dispatcher's
// client (its address policy and no-redirect rule).

// githubForm is the address the github types take.
const githubForm = "https://github.com/<owner>/<repo> (or a GitHub Enterprise host's)"

// maxGitHubDescription is GitHub's limit: a longer description is
// refused with 422.
const maxGitHubDescription = 140

// githubRepo is a GitHub repository and the API that serves it.
type githubRepo struct {
	cfg Config
	// root is the API's URL (https://api.github.com), api the
	// repository's, root + /repos/{owner}/{repo}.
	root, api string
}

// newGitHubRepo checks the address and token of both github types.
// github.com's API is api.github.com; a GitHub Enterprise Server's is
// https://<host>/api/v3.
func newGitHubRepo(cfg Config) (githubRepo, error) {
	return newGitHubRepoOf(cfg, githubToken)
}

// newGitHubRepoOf is newGitHubRepo with what the token must be allowed
// (token), for the error when it is missing.
func newGitHubRepoOf(cfg Config, token string) (githubRepo, error) {
	repo, err := parseRepository(cfg, githubForm)
	if err != nil {
		return githubRepo{}, err
	}
	if len(repo.segments) != 2 {
		return githubRepo{}, errWrongForm(cfg.Type, githubForm)
	}
	if cfg.Token == "" && cfg.GitHubApp == nil {
		return githubRepo{}, needToken(cfg.Type, token)
	}
	base := repo.api("/api/v3")
	if h := strings.ToLower(repo.base.Hostname()); h == "github.com" || h == "www.github.com" {
		base = "https://api.github.com"
	}
	return githubRepo{cfg: cfg, root: base, api: base + "/repos/" + url.PathEscape(repo.segments[0]) + "/" + url.PathEscape(repo.segments[1])}, nil
}

func (g githubRepo) auth() http.Header {
	return http.Header{
		"Authorization":        {"Bearer " + g.cfg.Token},
		"Accept":               {"application/vnd.github+json"},
		"X-Github-Api-Version": {"2022-11-28"},
	}
}

func newGitHub(cfg Config) (Notifier, error) {
	g, err := newGitHubRepo(cfg)
	if err != nil {
		return nil, err
	}
	return &commitStatusNotifier{cfg: cfg, host: github{g}}, nil
}

// github posts commit statuses.
type github struct{ githubRepo }

// githubStatus is the body of "create a commit status".
type githubStatus struct {
	State       string `json:"state"`
	Description string `json:"description,omitempty"`
	Context     string `json:"context"`
}

var githubStates = map[statusState]string{stateSuccess: "success", stateFailure: "failure", statePending: "pending"}

func (g github) status(st commitStatus) githubStatus {
	return githubStatus{State: githubStates[st.state], Description: clipRunes(st.description, maxGitHubDescription), Context: st.context}
}

func (g github) post(ctx context.Context, st commitStatus) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPost, url: g.api + "/statuses/" + st.sha, auth: g.auth(), body: g.status(st)})
}

// shows reads the commit's combined status (GET
// /repos/{owner}/{repo}/commits/{sha}/status).
func (g github) shows(ctx context.Context, st commitStatus) bool {
	want := g.status(st)
	return combinedShows(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.api + "/commits/" + st.sha + "/status?per_page=100", auth: g.auth()},
		shownStatus{want.Context, want.State, want.Description})
}
