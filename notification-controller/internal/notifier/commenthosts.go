package notifier

import (
	"context"
	"net/http"
	"strconv"
)

// The change request comment APIs of GitHub, GitLab and Gitea, on the
// API bases and credentials of the hosts' commit statuses (github.go,
// gitlab.go, gitea.go). GitHub and GitLab list only the first page of
// comments, the largest they serve (100; Flux does the same): the comment
// is written at the first event after the request is opened, so it is
// among the first; one it does not find is written again.

// maxCommentList bounds a list of comments read: a page of 100 comments
// of a few KiB each, where a status list is a few hundred bytes.
const maxCommentList = 8 << 20

// commentBodyJSON is the body of every host's "create" and "edit" of a
// comment.
type commentBodyJSON struct {
	Body string `json:"body"`
}

// num is a change request's or comment's number in a path.
func num(n int64) string { return strconv.FormatInt(n, 10) }

func newGitHubComments(cfg Config) (Notifier, error) {
	g, err := newGitHubRepoOf(cfg, githubCommentToken)
	if err != nil {
		return nil, err
	}
	return &commentNotifier{cfg: cfg, host: issueComments{cfg: cfg, root: g.root, api: g.api, header: g.auth(), pages: "?per_page=100"}}, nil
}

// issueComments are a pull request's comments, its issue's, on GitHub and
// on Gitea, which shares the API's shape: GET /user's login; GET and POST
// {api}/issues/{number}/comments; PATCH {api}/issues/comments/{id}.
type issueComments struct {
	cfg Config
	// root is the host's API, api the repository's (githubRepo, gitea).
	root, api string
	header    http.Header
	// pages is the list's query: GitHub pages it, Gitea answers every
	// comment of the issue (its endpoint has no pages).
	pages string
}

func (g issueComments) me(ctx context.Context) (string, error) {
	if g.cfg.AppLogin != "" {
		// A GitHub App's installation token has no user: its comments'
		// author is the App's bot (AuthenticateApp).
		return g.cfg.AppLogin, nil
	}
	var user struct {
		Login string `json:"login"`
	}
	err := call(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.root + "/user", auth: g.header, into: &user})
	return user.Login, err
}

func (g issueComments) list(ctx context.Context, number int64) ([]hostComment, error) {
	var page []struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	err := call(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.api + "/issues/" + num(number) + "/comments" + g.pages, auth: g.header, into: &page, limit: maxCommentList})
	out := make([]hostComment, len(page))
	for i, c := range page {
		out[i] = hostComment{id: c.ID, author: c.User.Login, body: c.Body}
	}
	return out, err
}

func (g issueComments) create(ctx context.Context, number int64, body string) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPost, url: g.api + "/issues/" + num(number) + "/comments", auth: g.header, body: commentBodyJSON{body}})
}

func (g issueComments) edit(ctx context.Context, _, id int64, body string) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPatch, url: g.api + "/issues/comments/" + num(id), auth: g.header, body: commentBodyJSON{body}})
}

func newGitLabComments(cfg Config) (Notifier, error) {
	g, err := newGitLabProject(cfg)
	if err != nil {
		return nil, err
	}
	return &commentNotifier{cfg: cfg, host: gitlabNotes{g}}, nil
}

// gitlabNotes are a merge request's notes, by its IID:
// /projects/{id}/merge_requests/{iid}/notes, PUT .../notes/{note_id}.
type gitlabNotes struct{ gitlab }

// me is GET /user's username.
func (g gitlabNotes) me(ctx context.Context) (string, error) {
	var user struct {
		Username string `json:"username"`
	}
	err := call(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.root + "/user", auth: g.auth(), into: &user})
	return user.Username, err
}

func (g gitlabNotes) notes(number int64) string {
	return g.project + "/merge_requests/" + num(number) + "/notes"
}

func (g gitlabNotes) list(ctx context.Context, number int64) ([]hostComment, error) {
	var page []struct {
		ID     int64  `json:"id"`
		Body   string `json:"body"`
		Author struct {
			Username string `json:"username"`
		} `json:"author"`
	}
	// GitLab lists the newest first unless told otherwise.
	err := call(ctx, g.cfg, hostCall{method: http.MethodGet, url: g.notes(number) + "?sort=asc&order_by=created_at&per_page=100", auth: g.auth(), into: &page, limit: maxCommentList})
	out := make([]hostComment, len(page))
	for i, c := range page {
		out[i] = hostComment{id: c.ID, author: c.Author.Username, body: c.Body}
	}
	return out, err
}

func (g gitlabNotes) create(ctx context.Context, number int64, body string) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPost, url: g.notes(number), auth: g.auth(), body: commentBodyJSON{body}})
}

func (g gitlabNotes) edit(ctx context.Context, number, id int64, body string) error {
	return call(ctx, g.cfg, hostCall{method: http.MethodPut, url: g.notes(number) + "/" + num(id), auth: g.auth(), body: commentBodyJSON{body}})
}

func newGiteaComments(cfg Config) (Notifier, error) {
	g, err := newGiteaRepo(cfg, giteaCommentToken)
	if err != nil {
		return nil, err
	}
	return &commentNotifier{cfg: cfg, host: issueComments{cfg: cfg, root: g.root, api: g.api, header: g.auth()}}, nil
}
