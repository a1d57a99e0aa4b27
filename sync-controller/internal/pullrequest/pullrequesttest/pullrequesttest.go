package pullrequesttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Kind is the Git host a stand-in plays.
type Kind string

// The Git hosts served.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
	Gitea  Kind = "gitea"
)

// PR is an open pull request (a merge request on GitLab).
type PR struct {
	Number       int64
	Title        string
	Branch       string
	TargetBranch string
	SHA          string
	Author       string
	Labels       []string
}

// Host is a running stand-in.
type Host struct {
	// URL is what a generator's api names: GitHub's REST root, GitLab's
	// and Gitea's server URL.
	URL string
	// Owner and Repo (GitHub, Gitea) or Project (GitLab) are the one
	// repository served; any other is 404.
	Owner, Repo, Project string
	// Token is the one token accepted; "" accepts only anonymous requests.
	Token string
	// PageSize is the most items of one page, whatever the client asks
	// (a host's own maximum).
	PageSize int

	kind     Kind
	srv      *httptest.Server
	mu       sync.Mutex
	open     []PR
	status   int
	pad      int
	requests []string
}

// Start serves kind over HTTPS (httptest's certificate) until the test
// ends.
func Start(t testing.TB, kind Kind, token string) *Host {
	h := &Host{kind: kind, Owner: "acme", Repo: "shop", Project: "acme/shop", Token: token, PageSize: 2}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	h.URL = h.srv.URL
	return h
}

// SetOpen makes prs the open pull requests.
func (h *Host) SetOpen(prs ...PR) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = slices.Clone(prs)
}

// Fail makes every answer status (with a JSON error body); 0 answers
// normally again.
func (h *Host) Fail(status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status = status
}

// SetToken changes the one token accepted (a rotated token).
func (h *Host) SetToken(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Token = token
}

// Pad adds n bytes of spaces to every page (valid JSON, a larger answer).
func (h *Host) Pad(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pad = n
}

// Requests are the path and query of every request served, in order.
func (h *Host) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

func (h *Host) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, r.URL.RequestURI())
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		answer(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if !h.authorized(r) {
		answer(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	if h.status != 0 {
		answer(w, h.status, "the stand-in fails")
		return
	}
	switch h.kind {
	case GitHub:
		h.github(w, r)
	case GitLab:
		h.gitlab(w, r)
	case Gitea:
		h.gitea(w, r)
	}
}

// authorized checks the header each host reads its token from: GitHub
// "Authorization: Bearer" (or the older "token"), GitLab PRIVATE-TOKEN,
// Gitea "Authorization: token".
func (h *Host) authorized(r *http.Request) bool {
	var got string
	switch h.kind {
	case GitHub:
		a := r.Header.Get("Authorization")
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			got = t
		} else if t, ok := strings.CutPrefix(a, "token "); ok {
			got = t
		} else if a != "" {
			return false
		}
	case GitLab:
		got = r.Header.Get("PRIVATE-TOKEN")
	case Gitea:
		a := r.Header.Get("Authorization")
		if t, ok := strings.CutPrefix(a, "token "); ok {
			got = t
		} else if a != "" {
			return false
		}
	}
	return got == h.Token
}

// github serves GET /repos/{owner}/{repo}/pulls?state=open&per_page=&page=
// with a Link header to the next page.
func (h *Host) github(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != "/repos/"+h.Owner+"/"+h.Repo+"/pulls" {
		answer(w, http.StatusNotFound, "Not Found")
		return
	}
	if r.Header.Get("Accept") != "application/vnd.github+json" {
		answer(w, http.StatusUnsupportedMediaType, "Accept must be application/vnd.github+json")
		return
	}
	q := r.URL.Query()
	if q.Get("state") != "open" {
		answer(w, http.StatusUnprocessableEntity, "the stand-in serves state=open only")
		return
	}
	per, page, ok := paging(w, q, "per_page", 100)
	if !ok {
		return
	}
	items, more := h.page(h.open, per, page)
	if more {
		next := url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path}
		nq := url.Values{"state": {"open"}, "per_page": {strconv.Itoa(per)}, "page": {strconv.Itoa(page + 1)}}
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, next.String(), next.String()))
	}
	h.write(w, githubShape(items, "open"))
}

// gitlab serves GET /api/v4/projects/{url-encoded path}/merge_requests
// ?state=opened&labels=&per_page=&page= with X-Next-Page.
func (h *Host) gitlab(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != "/api/v4/projects/"+url.PathEscape(h.Project)+"/merge_requests" {
		answer(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	q := r.URL.Query()
	var prs []PR
	if q.Get("state") == "opened" {
		for _, pr := range h.open {
			if hasAll(pr.Labels, q.Get("labels")) {
				prs = append(prs, pr)
			}
		}
	} else if q.Get("state") == "" {
		answer(w, http.StatusBadRequest, "the stand-in wants a state")
		return
	}
	per, page, ok := paging(w, q, "per_page", 100)
	if !ok {
		return
	}
	items, more := h.page(prs, per, page)
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	w.Header().Set("X-Next-Page", "")
	if more {
		w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
	}
	out := make([]map[string]any, 0, len(items))
	for _, pr := range items {
		out = append(out, map[string]any{
			"id": 1000 + pr.Number, "iid": pr.Number, "title": pr.Title, "state": "opened",
			"source_branch": pr.Branch, "target_branch": pr.TargetBranch, "sha": pr.SHA,
			"labels": nonNil(pr.Labels), "author": map[string]any{"username": pr.Author},
		})
	}
	h.write(w, out)
}

// gitea serves GET /api/v1/repos/{owner}/{repo}/pulls?state=open&page=
// &limit=, an empty list past the last page.
func (h *Host) gitea(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != "/api/v1/repos/"+h.Owner+"/"+h.Repo+"/pulls" {
		answer(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	q := r.URL.Query()
	if q.Get("state") != "open" {
		answer(w, http.StatusUnprocessableEntity, "the stand-in serves state=open only")
		return
	}
	per, page, ok := paging(w, q, "limit", 50)
	if !ok {
		return
	}
	items, _ := h.page(h.open, per, page)
	h.write(w, githubShape(items, "open"))
}

// page is the items of page (from 1) of per items, cut to PageSize, and
// whether more follow.
func (h *Host) page(prs []PR, per, page int) ([]PR, bool) {
	per = min(per, h.PageSize)
	from := (page - 1) * per
	if from >= len(prs) {
		return nil, false
	}
	to := min(from+per, len(prs))
	return prs[from:to], to < len(prs)
}

func (h *Host) write(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	if h.pad > 0 {
		b = append(b, strings.Repeat(" ", h.pad)...)
	}
	_, _ = w.Write(b)
}

// githubShape is GitHub's (and Gitea's) pull request JSON.
func githubShape(prs []PR, state string) []map[string]any {
	out := make([]map[string]any, 0, len(prs))
	for _, pr := range prs {
		labels := make([]map[string]any, 0, len(pr.Labels))
		for _, l := range pr.Labels {
			labels = append(labels, map[string]any{"name": l, "color": "ededed"})
		}
		out = append(out, map[string]any{
			"number": pr.Number, "title": pr.Title, "state": state,
			"user":   map[string]any{"login": pr.Author},
			"head":   map[string]any{"ref": pr.Branch, "sha": pr.SHA},
			"base":   map[string]any{"ref": pr.TargetBranch},
			"labels": labels,
		})
	}
	return out
}

// paging reads the page size parameter (1 to most) and page (from 1),
// answering 400 for a bad one.
func paging(w http.ResponseWriter, q url.Values, sizeParam string, most int) (per, page int, ok bool) {
	per, page = most, 1
	if v := q.Get(sizeParam); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			answer(w, http.StatusBadRequest, sizeParam+" must be 1 to "+strconv.Itoa(most))
			return 0, 0, false
		}
		per = n
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			answer(w, http.StatusBadRequest, "bad page")
			return 0, 0, false
		}
		page = n
	}
	return per, page, true
}

func hasAll(have []string, want string) bool {
	if want == "" {
		return true
	}
	for _, l := range strings.Split(want, ",") {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func answer(w http.ResponseWriter, status int, msg string) {
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	_, _ = w.Write(b)
}
