package pullrequest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/netguard"
	"plumb.dev/sync-controller/internal/pullrequest"
	"plumb.dev/sync-controller/internal/pullrequest/pullrequesttest"
)

var loopback = netguard.Policy{AllowLoopback: true}

// tlsOf is the configuration that trusts httptest's certificate.
func tlsOf(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func client(h *pullrequesttest.Host, limits pullrequest.Limits) *pullrequest.Client {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	return pullrequest.New(loopback, limits, tlsOf(srv))
}

func fivePRs() []pullrequesttest.PR {
	var prs []pullrequesttest.PR
	for i := 1; i <= 5; i++ {
		labels := []string{"preview"}
		if i == 3 {
			labels = nil
		}
		prs = append(prs, pullrequesttest.PR{Number: int64(i), Title: fmt.Sprintf("change %d", i), Branch: fmt.Sprintf("feature/%d", i),
			TargetBranch: "main", SHA: fmt.Sprintf("%040d", i), Author: "alice", Labels: labels})
	}
	return prs
}

func repository(h *pullrequesttest.Host, kind pullrequest.Host) pullrequest.Repository {
	return pullrequest.Repository{Host: kind, API: h.URL, Owner: h.Owner, Repo: h.Repo, Project: h.Project, Token: h.Token}
}

// Each host's listing follows its paging (GitHub's Link header, GitLab's
// X-Next-Page, Gitea's pages until an empty one) with the host's own
// auth header, and keeps only the pull requests with every label asked.
func TestEachHostIsListedAcrossPagesWithItsOwnAuthHeader(t *testing.T) {
	for _, tc := range []struct {
		kind  pullrequest.Host
		want  []string
		label bool
	}{
		{kind: pullrequest.GitHub, label: true, want: []string{
			"/repos/acme/shop/pulls?per_page=100&state=open",
			"/repos/acme/shop/pulls?page=2&per_page=100&state=open",
			"/repos/acme/shop/pulls?page=3&per_page=100&state=open",
		}},
		{kind: pullrequest.GitLab, label: true, want: []string{
			"/api/v4/projects/acme%2Fshop/merge_requests?labels=preview&page=1&per_page=100&state=opened",
			"/api/v4/projects/acme%2Fshop/merge_requests?labels=preview&page=2&per_page=100&state=opened",
		}},
		{kind: pullrequest.Gitea, label: true, want: []string{
			"/api/v1/repos/acme/shop/pulls?limit=50&page=1&state=open",
			"/api/v1/repos/acme/shop/pulls?limit=50&page=2&state=open",
			"/api/v1/repos/acme/shop/pulls?limit=50&page=3&state=open",
			"/api/v1/repos/acme/shop/pulls?limit=50&page=4&state=open",
		}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			g := NewWithT(t)
			h := pullrequesttest.Start(t, pullrequesttest.Kind(tc.kind), "s3cret")
			h.SetOpen(fivePRs()...)
			repo := repository(h, tc.kind)
			if tc.label {
				repo.Labels = []string{"preview"}
			}
			prs, err := client(h, pullrequest.DefaultLimits).List(context.Background(), repo)
			g.Expect(err).NotTo(HaveOccurred())
			var numbers []int64
			for _, pr := range prs {
				numbers = append(numbers, pr.Number)
			}
			if tc.label {
				g.Expect(numbers).To(Equal([]int64{1, 2, 4, 5}))
			} else {
				g.Expect(numbers).To(Equal([]int64{1, 2, 3, 4, 5}))
			}
			g.Expect(prs[0]).To(Equal(pullrequest.PullRequest{Number: 1, Title: "change 1", Branch: "feature/1", TargetBranch: "main",
				HeadSHA: fmt.Sprintf("%040d", 1), Author: "alice", Labels: []string{"preview"}}))
			g.Expect(h.Requests()).To(Equal(tc.want))
		})
	}
}

// A token the host refuses is an error quoting its status.
func TestAWrongTokenIsAnError(t *testing.T) {
	g := NewWithT(t)
	h := pullrequesttest.Start(t, pullrequesttest.GitHub, "right")
	repo := repository(h, pullrequest.GitHub)
	repo.Token = "wrong"
	_, err := client(h, pullrequest.DefaultLimits).List(context.Background(), repo)
	g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
	g.Expect(err).To(MatchError(ContainSubstring("Bad credentials")))
}

// A page over MaxPageBytes, more pages than MaxPages and more pull
// requests than MaxPullRequests each end the listing with an error, not
// a shorter list.
func TestBoundsEndAListingWithAnError(t *testing.T) {
	g := NewWithT(t)
	h := pullrequesttest.Start(t, pullrequesttest.GitHub, "")
	h.SetOpen(fivePRs()...)
	repo := repository(h, pullrequest.GitHub)
	ctx := context.Background()

	_, err := client(h, pullrequest.Limits{MaxPages: 2, MaxPageBytes: 1 << 20, MaxPullRequests: 100}).List(ctx, repo)
	g.Expect(err).To(MatchError(ContainSubstring("more than 2 pages")))

	_, err = client(h, pullrequest.Limits{MaxPages: 10, MaxPageBytes: 1 << 20, MaxPullRequests: 4}).List(ctx, repo)
	g.Expect(err).To(MatchError(ContainSubstring("more than 4 pull requests")))

	h.Pad(4096)
	_, err = client(h, pullrequest.Limits{MaxPages: 10, MaxPageBytes: 4096, MaxPullRequests: 100}).List(ctx, repo)
	g.Expect(err).To(MatchError(ContainSubstring("larger than 4096 bytes")))
}

// A token goes only over HTTPS: an http:// API with a token is refused
// before any request, and is an InvalidError (no retry helps).
func TestATokenIsSentOnlyOverHTTPS(t *testing.T) {
	g := NewWithT(t)
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { asked++; _, _ = w.Write([]byte("[]")) }))
	defer srv.Close()
	c := pullrequest.New(loopback, pullrequest.DefaultLimits, nil)
	_, err := c.List(context.Background(), pullrequest.Repository{Host: pullrequest.Gitea, API: srv.URL, Owner: "o", Repo: "r", Token: "t"})
	var invalid *pullrequest.InvalidError
	g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("only over HTTPS")))
	g.Expect(asked).To(BeZero())
	// Without a token, plain HTTP is only a choice of the set's author.
	prs, err := c.List(context.Background(), pullrequest.Repository{Host: pullrequest.Gitea, API: srv.URL, Owner: "o", Repo: "r"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prs).To(BeEmpty())
	g.Expect(asked).To(Equal(1))
}

// A page link or a redirect to another host is refused: the token would
// follow it.
func TestAPageLinkOrRedirectToAnotherHostIsRefused(t *testing.T) {
	g := NewWithT(t)
	var other *httptest.Server
	var tokenSeen []string
	other = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenSeen = append(tokenSeen, r.Header.Get("PRIVATE-TOKEN")+r.Header.Get("Authorization"))
		_, _ = w.Write([]byte("[]"))
	}))
	defer other.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v4/") {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
			return
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s/repos/o/r/pulls?page=2>; rel="next"`, other.URL))
		_, _ = w.Write([]byte("[]"))
	}))
	defer api.Close()
	c := pullrequest.New(loopback, pullrequest.DefaultLimits, tlsOf(api))
	ctx := context.Background()

	_, err := c.List(ctx, pullrequest.Repository{Host: pullrequest.GitHub, API: api.URL, Owner: "o", Repo: "r", Token: "t"})
	g.Expect(err).To(MatchError(ContainSubstring("is not on the API's host")))
	_, err = c.List(ctx, pullrequest.Repository{Host: pullrequest.GitLab, API: api.URL, Project: "g/p", Token: "t"})
	g.Expect(err).To(MatchError(ContainSubstring("redirected")))
	g.Expect(tokenSeen).To(BeEmpty())
}

// Connections go only where the address policy allows: loopback is
// refused unless allowed.
func TestTheAddressPolicyJudgesTheAPI(t *testing.T) {
	g := NewWithT(t)
	h := pullrequesttest.Start(t, pullrequesttest.GitHub, "")
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	c := pullrequest.New(netguard.Policy{LoopbackFlag: "--allowed-private-networks"}, pullrequest.DefaultLimits, tlsOf(srv))
	_, err := c.List(context.Background(), repository(h, pullrequest.GitHub))
	var refused *netguard.RefusedAddressError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	g.Expect(h.Requests()).To(BeEmpty())
}
