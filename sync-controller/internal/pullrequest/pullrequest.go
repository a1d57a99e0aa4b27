package pullrequest

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"plumb.dev/pkg/egress"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/netguard"
)

// Host is a kind of Git host API.
type Host string

// The hosts a Repository may be on.
const (
	GitHub Host = "github"
	GitLab Host = "gitlab"
	Gitea  Host = "gitea"
)

// The APIs' addresses when a generator names none (Gitea has no public
// default).
const (
	DefaultGitHubAPI = "https://api.github.com"
	DefaultGitLabAPI = "https://gitlab.com"
)

// RequestTimeout bounds one request, its answer read in full.
const RequestTimeout = 30 * time.Second

// Limits bound one listing.
type Limits struct {
	// MaxPages is the most pages read.
	MaxPages int
	// MaxPageBytes is the largest answer body read.
	MaxPageBytes int64
	// MaxPullRequests is the most pull requests kept (after the label
	// filter).
	MaxPullRequests int
}

// DefaultLimits: 1,000 pull requests (an ObjectSet's elements) take 10
// pages of GitHub or GitLab and 20 of Gitea; a GitHub page of 100 pull
// requests is about 2 MiB.
var DefaultLimits = Limits{MaxPages: 25, MaxPageBytes: 8 << 20, MaxPullRequests: 1000}

// PullRequest is what a generator's elements say of one pull request.
type PullRequest struct {
	Number       int64
	Title        string
	Branch       string
	TargetBranch string
	HeadSHA      string
	Author       string
	Labels       []string
}

// Repository is where to list pull requests, and how.
type Repository struct {
	Host Host
	// API is the base URL: GitHub's REST root (https://api.github.com,
	// https://HOST/api/v3), GitLab's or Gitea's server URL.
	API string
	// Owner and Repo name a GitHub or Gitea repository; Project a GitLab
	// project (its ID or group/name path).
	Owner, Repo, Project string
	// Token, when set, is sent as the host wants it.
	Token string
	// Labels keep the pull requests that carry all of them.
	Labels []string
	// State is GitLab's merge request state; opened when empty.
	State string
}

// Client lists pull requests.
type Client struct {
	http   *http.Client
	limits Limits
}

// New returns a Client that connects only where addresses allows, with
// tlsConfig when it is set (nil: the system's roots).
func New(addresses netguard.Policy, limits Limits, tlsConfig *tls.Config) *Client {
	t := egress.Transport(addresses)
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	c := &Client{limits: limits}
	c.http = &http.Client{
		Transport:     egress.Excerpts(t),
		Timeout:       RequestTimeout,
		CheckRedirect: sameOrigin,
	}
	return c
}

// sameOrigin follows at most three redirects, each to the scheme and host
// of the first request: net/http would carry a PRIVATE-TOKEN header to
// any host.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("more than 3 redirects")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirected from %s to another host or scheme (%s://%s)", first.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// List returns the repository's pull requests, open ones (GitLab: of
// repo.State), that carry every label of repo.Labels.
func (c *Client) List(ctx context.Context, repo Repository) ([]PullRequest, error) {
	base, err := apiURL(repo)
	if err != nil {
		return nil, err
	}
	l := &listing{c: c, base: base, repo: repo}
	switch repo.Host {
	case GitHub:
		return l.github(ctx)
	case GitLab:
		return l.gitlab(ctx)
	case Gitea:
		return l.gitea(ctx)
	}
	return nil, fmt.Errorf("unknown Git host %q", repo.Host)
}

// InvalidError is a repository that no retry can list: its API's URL is
// no URL, or would carry the token over plain HTTP.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// apiURL is the repository's API base URL, checked.
func apiURL(repo Repository) (*url.URL, error) {
	raw := repo.API
	if raw == "" {
		switch repo.Host {
		case GitHub:
			raw = DefaultGitHubAPI
		case GitLab:
			raw = DefaultGitLabAPI
		default:
			return nil, &InvalidError{errors.New("api is required")}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &InvalidError{fmt.Errorf("api: %w", err)}
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return nil, &InvalidError{fmt.Errorf("api %q is no http or https URL", raw)}
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, &InvalidError{fmt.Errorf("api %q may hold no credentials, query or fragment", u.Redacted())}
	}
	if repo.Token != "" && u.Scheme != "https" {
		return nil, &InvalidError{fmt.Errorf("api %q is plain HTTP: a token is sent only over HTTPS", raw)}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// listing is one List call's state.
type listing struct {
	c     *Client
	base  *url.URL
	repo  Repository
	pages int
	out   []PullRequest
}

// github reads /repos/{owner}/{repo}/pulls?state=open, following the
// Link header's next page.
func (l *listing) github(ctx context.Context) ([]PullRequest, error) {
	next := l.endpoint("/repos/"+url.PathEscape(l.repo.Owner)+"/"+url.PathEscape(l.repo.Repo)+"/pulls",
		url.Values{"state": {"open"}, "per_page": {"100"}})
	for next != "" {
		var page []githubPull
		h, err := l.get(ctx, next, func(r *http.Request) {
			r.Header.Set("Accept", "application/vnd.github+json")
			r.Header.Set("X-GitHub-Api-Version", "2022-11-28")
			if l.repo.Token != "" {
				r.Header.Set("Authorization", "Bearer "+l.repo.Token)
			}
		}, &page)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			if err := l.keep(p.pullRequest()); err != nil {
				return nil, err
			}
		}
		if next, err = l.nextLink(h.Get("Link")); err != nil {
			return nil, err
		}
	}
	return l.out, nil
}

// githubPull is the part of a pull request that GitHub and Gitea (whose
// API follows GitHub's) answer that a generator reads.
type githubPull struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
	User   struct {
		Login string `json:"login"`
	} `json:"user"`
	Head struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

func (p githubPull) pullRequest() PullRequest {
	labels := make([]string, 0, len(p.Labels))
	for _, lb := range p.Labels {
		labels = append(labels, lb.Name)
	}
	return PullRequest{Number: p.Number, Title: p.Title, Branch: p.Head.Ref, TargetBranch: p.Base.Ref,
		HeadSHA: p.Head.SHA, Author: p.User.Login, Labels: labels}
}

// gitlab reads /api/v4/projects/{id}/merge_requests?state=…, following
// X-Next-Page.
func (l *listing) gitlab(ctx context.Context) ([]PullRequest, error) {
	q := url.Values{"state": {cmp.Or(l.repo.State, "opened")}, "per_page": {"100"}, "page": {"1"}}
	if len(l.repo.Labels) > 0 {
		q.Set("labels", strings.Join(l.repo.Labels, ","))
	}
	path := "/api/v4/projects/" + url.PathEscape(l.repo.Project) + "/merge_requests"
	for {
		var page []struct {
			IID          int64    `json:"iid"`
			Title        string   `json:"title"`
			SourceBranch string   `json:"source_branch"`
			TargetBranch string   `json:"target_branch"`
			SHA          string   `json:"sha"`
			Labels       []string `json:"labels"`
			Author       struct {
				Username string `json:"username"`
			} `json:"author"`
		}
		h, err := l.get(ctx, l.endpoint(path, q), func(r *http.Request) {
			if l.repo.Token != "" {
				r.Header.Set("PRIVATE-TOKEN", l.repo.Token)
			}
		}, &page)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			if err := l.keep(PullRequest{Number: p.IID, Title: p.Title, Branch: p.SourceBranch, TargetBranch: p.TargetBranch,
				HeadSHA: p.SHA, Author: p.Author.Username, Labels: p.Labels}); err != nil {
				return nil, err
			}
		}
		next := h.Get("X-Next-Page")
		if next == "" {
			return l.out, nil
		}
		if n, err := strconv.Atoi(next); err != nil || n < 1 {
			return nil, fmt.Errorf("X-Next-Page %q is no page number", message.Excerpt([]byte(next)))
		}
		q.Set("page", next)
	}
}

// giteaPageSize is the limit asked of Gitea: its default most items of
// an answer.
const giteaPageSize = 50

// gitea reads /api/v1/repos/{owner}/{repo}/pulls?state=open page by page
// until an empty page: a server whose own limit is below the one asked
// answers shorter pages that are not the last.
func (l *listing) gitea(ctx context.Context) ([]PullRequest, error) {
	q := url.Values{"state": {"open"}, "limit": {strconv.Itoa(giteaPageSize)}}
	path := "/api/v1/repos/" + url.PathEscape(l.repo.Owner) + "/" + url.PathEscape(l.repo.Repo) + "/pulls"
	for n := 1; ; n++ {
		q.Set("page", strconv.Itoa(n))
		var page []githubPull
		if _, err := l.get(ctx, l.endpoint(path, q), func(r *http.Request) {
			if l.repo.Token != "" {
				r.Header.Set("Authorization", "token "+l.repo.Token)
			}
		}, &page); err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return l.out, nil
		}
		for _, p := range page {
			if err := l.keep(p.pullRequest()); err != nil {
				return nil, err
			}
		}
	}
}

// endpoint is the API's URL of path (already escaped) with query q.
func (l *listing) endpoint(path string, q url.Values) string {
	u := *l.base
	u.RawPath = l.base.EscapedPath() + path
	var err error
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		u.Path = u.RawPath
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// keep adds pr when it carries every label asked (GitLab filters on its
// side too; a host that does not is filtered here), up to the bound.
func (l *listing) keep(pr PullRequest) error {
	for _, want := range l.repo.Labels {
		if !slices.Contains(pr.Labels, want) {
			return nil
		}
	}
	if len(l.out) >= l.c.limits.MaxPullRequests {
		return fmt.Errorf("more than %d pull requests", l.c.limits.MaxPullRequests)
	}
	l.out = append(l.out, pr)
	return nil
}

// nextLink is the rel="next" URL of a Link header, "" when there is
// none; it must be on the API's scheme and host.
func (l *listing) nextLink(header string) (string, error) {
	for part := range strings.SplitSeq(header, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(params, `rel="next"`) {
			continue
		}
		raw := strings.Trim(strings.TrimSpace(target), "<>")
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("the Link header's next page is no URL: %w", err)
		}
		if u.Scheme != l.base.Scheme || u.Host != l.base.Host {
			return "", fmt.Errorf("the Link header's next page %s://%s is not on the API's host %s", u.Scheme, u.Host, l.base.Host)
		}
		return u.String(), nil
	}
	return "", nil
}

// get reads one page into v (a JSON array) and returns its headers.
func (l *listing) get(ctx context.Context, target string, auth func(*http.Request), v any) (http.Header, error) {
	if l.pages++; l.pages > l.c.limits.MaxPages {
		return nil, fmt.Errorf("more than %d pages of pull requests", l.c.limits.MaxPages)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "plumb-sync-controller")
	auth(req)
	resp, err := l.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing pull requests: %w", stripURL(err))
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, l.c.limits.MaxPageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("listing pull requests: reading page %d: %w", l.pages, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("listing pull requests: %s answered %s: %s", l.base.Host, resp.Status, body)
	}
	if int64(len(body)) > l.c.limits.MaxPageBytes {
		return nil, fmt.Errorf("listing pull requests: page %d is larger than %d bytes", l.pages, l.c.limits.MaxPageBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("listing pull requests: page %d is no JSON list of pull requests: %w", l.pages, err)
	}
	return resp.Header, nil
}

// stripURL drops the request's URL from a transport error: the error
// still says what failed, and a URL the host chose (a page link) is not
// quoted into status.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, hostOf(ue.URL), ue.Err)
	}
	return err
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "the API"
}
