package notifier

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

func syncEvent(sev events.Severity, reason, message, revision string) events.Event {
	return events.Event{
		SchemaVersion:       events.SchemaVersion,
		ID:                  "0b7d2a9c",
		InvolvedObject:      events.ObjectReference{APIVersion: "kustomize.plumb.dev/v1", Kind: "Kustomization", Namespace: "apps", Name: "web"},
		Severity:            sev,
		Reason:              reason,
		Message:             message,
		Revision:            revision,
		Timestamp:           time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		ReportingController: "sync-controller",
	}
}

// The context of apps/web's statuses through the test Provider (UID
// 0c9e5f1d-…).
const webContext = "kustomization/apps/web/0c9e5f1d"

// TestEachHostGetsTheOutcomeOnTheCommit: a succeeded, a failed and a
// progressing sync of main@sha1:<sha> reach each host's stand-in, which
// checks path, authentication and body as the host does, in the host's
// state names, under one context per object.
func TestEachHostGetsTheOutcomeOnTheCommit(t *testing.T) {
	states := map[string][3]string{ // success, failure, progressing
		notificationv1.GitHubProvider:          {"success", "failure", "pending"},
		notificationv1.GitLabProvider:          {"success", "failed", "running"},
		notificationv1.GiteaProvider:           {"success", "failure", "pending"},
		notificationv1.BitbucketProvider:       {"SUCCESSFUL", "FAILED", "INPROGRESS"},
		notificationv1.BitbucketServerProvider: {"SUCCESSFUL", "FAILED", "INPROGRESS"},
		notificationv1.AzureDevOpsProvider:     {"succeeded", "error", "pending"},
	}
	for _, c := range contracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host, srv := newHostStandIn(t, c.typ)
			n, err := New(configFor(c, srv))
			g.Expect(err).NotTo(HaveOccurred())
			rev := "main@sha1:" + testSHA
			for _, e := range []events.Event{
				syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "revision main: 2 created", rev),
				syncEvent(events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/apps/web is Degraded", rev),
				syncEvent(events.SeverityInfo, meta.ProgressingReason, "reconciliation in progress", rev),
			} {
				g.Expect(n.Post(context.Background(), e)).To(Succeed())
			}
			got := host.received()
			g.Expect(got).To(HaveLen(3))
			want := states[c.typ]
			for i, r := range got {
				g.Expect(r.SHA).To(Equal(testSHA))
				g.Expect(r.State).To(Equal(want[i]))
				g.Expect(r.Context).To(Equal(webContext))
			}
			g.Expect(got[1].Description).To(Equal("Deployment/apps/web is Degraded"))
			switch c.typ {
			case notificationv1.BitbucketProvider:
				g.Expect(got[0].Extra["key"]).To(HaveLen(40))
				g.Expect(got[0].Extra["url"]).To(Equal(srv.URL + "/workspace/repo"))
			case notificationv1.BitbucketServerProvider:
				g.Expect(got[0].Extra["key"]).To(Equal(webContext))
			case notificationv1.AzureDevOpsProvider:
				g.Expect(got[0].Extra["genre"]).To(Equal("plumb"))
			}
		})
	}
}

// TestAHelmReleaseGetsItsOwnContext: HelmRelease syncs are reported too,
// under their own context.
func TestAHelmReleaseGetsItsOwnContext(t *testing.T) {
	g := NewWithT(t)
	host, srv := newHostStandIn(t, notificationv1.GitHubProvider)
	n, err := New(configFor(contractOf(notificationv1.GitHubProvider), srv))
	g.Expect(err).NotTo(HaveOccurred())
	e := syncEvent(events.SeverityInfo, helmv2.UpgradeSucceededReason, "upgrade succeeded", testSHA)
	e.InvolvedObject = events.ObjectReference{Kind: helmv2.HelmReleaseKind, Namespace: "apps", Name: "podinfo"}
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	g.Expect(host.received()).To(ConsistOf(HaveField("Context", "helmrelease/apps/podinfo/0c9e5f1d")))
}

// TestBitbucketServerTakesAUserAndPassword: without a token, the
// Secret's username and password authenticate (HTTP Basic).
func TestBitbucketServerTakesAUserAndPassword(t *testing.T) {
	g := NewWithT(t)
	host, srv := newHostStandIn(t, notificationv1.BitbucketServerProvider)
	cfg := configFor(contractOf(notificationv1.BitbucketServerProvider), srv)
	cfg.Token, cfg.User, cfg.Password = "", "ci-bot", "pa55word"
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", testSHA))).To(Succeed())
	g.Expect(host.received()).To(ConsistOf(HaveField("State", "SUCCESSFUL")))

	cfg.Password = ""
	_, err = New(cfg)
	g.Expect(err).To(MatchError(ContainSubstring("or the keys username and password")))
}

// TestLongMessagesAreCutToWhatTheHostTakes: GitHub refuses a description
// over 140 characters; the others are kept to 255.
func TestLongMessagesAreCutToWhatTheHostTakes(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, c := range contracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host, srv := newHostStandIn(t, c.typ)
			n, _ := New(configFor(c, srv))
			g.Expect(n.Post(context.Background(), syncEvent(events.SeverityError, kustomizev1.ApplyFailedReason, long, testSHA))).To(Succeed())
			limit := maxStatusDescription
			if c.typ == notificationv1.GitHubProvider {
				limit = 140
			}
			got := host.received()
			g.Expect(got).To(HaveLen(1))
			g.Expect([]rune(got[0].Description)).To(HaveLen(limit))
			g.Expect(got[0].Description).To(HaveSuffix("…"))
		})
	}
}

// TestAHostIsNotToldWhatItAlreadyShows: on the hosts whose statuses
// accumulate (GitHub, Gitea, Azure DevOps) or that refuse a repeat
// (GitLab answers 400 to a status moved to the state it is in), the same
// status twice is posted once; a new state is posted, and the newest
// status of the context is the one compared. Bitbucket's statuses are
// keyed, replaced in place: each is posted.
func TestAHostIsNotToldWhatItAlreadyShows(t *testing.T) {
	for _, c := range contracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host, srv := newHostStandIn(t, c.typ)
			n, _ := New(configFor(c, srv))
			progressing := syncEvent(events.SeverityInfo, meta.ProgressingReason, "in progress", testSHA)
			applied := syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", testSHA)
			other := applied
			other.InvolvedObject.Name = "api"
			for _, e := range []events.Event{progressing, progressing, applied, other, progressing, applied, applied} {
				g.Expect(n.Post(context.Background(), e)).To(Succeed())
			}
			want := 5
			if c.list == nil {
				want = 7
			}
			g.Expect(host.posts()).To(Equal(want))
		})
	}
}

// TestEventsWithoutACommitAreSkipped: no revision, an abbreviated SHA, an
// OCI digest, and a kind that syncs nothing are skipped (a Skipped, no
// request); bare and sha1:-prefixed SHAs are commits.
func TestEventsWithoutACommitAreSkipped(t *testing.T) {
	for _, c := range contracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host, srv := newHostStandIn(t, c.typ)
			n, _ := New(configFor(c, srv))
			gitRepo := syncEvent(events.SeverityInfo, sourcev1.NewArtifactReason, "stored artifact", "main@sha1:"+testSHA)
			gitRepo.InvolvedObject = events.ObjectReference{Kind: sourcev1.GitRepositoryKind, Namespace: "apps", Name: "web"}
			for name, e := range map[string]events.Event{
				"no revision":      syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", ""),
				"abbreviated sha":  syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "main@sha1:4f3c2b1a"),
				"oci digest":       syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "latest@sha256:"+strings.Repeat("ab", 32)),
				"not hex":          syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "main@sha1:"+strings.Repeat("z", 40)),
				"a GitRepository":  gitRepo,
				"no kind of sync":  func() events.Event { e := gitRepo; e.InvolvedObject.Kind = "Receiver"; return e }(),
				"sha256 git":       syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "sha256:"+strings.Repeat("ab", 32)),
				"sha1 of an other": syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "v1.2.3"),
			} {
				err := n.Post(context.Background(), e)
				g.Expect(IsSkipped(err)).To(BeTrue(), name)
				g.Expect(IsPermanent(err)).To(BeFalse(), name)
			}
			g.Expect(host.posts()).To(BeZero())
			g.Expect(n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "main@sha1:4f3c2b1a"))).To(
				MatchError(`skipped: the revision "main@sha1:4f3c2b1a" names no full Git commit SHA (40 hex digits)`))
			g.Expect(n.Post(context.Background(), gitRepo)).To(
				MatchError("skipped: a GitRepository event is no sync of a commit (commit statuses report Kustomizations and HelmReleases)"))

			for _, rev := range []string{testSHA, "sha1:" + testSHA, "refs/heads/main@sha1:" + strings.ToUpper(testSHA)} {
				g.Expect(n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", rev))).To(Succeed(), rev)
			}
			g.Expect(host.received()).To(HaveEach(HaveField("SHA", testSHA)))
		})
	}
}

// TestHostAnswers: bad credentials and refusals are reported once,
// rate limits and server errors retried; no error shows the token, the
// address or what the host answered.
func TestHostAnswers(t *testing.T) {
	for _, c := range contracts {
		t.Run(c.typ, func(t *testing.T) {
			bad := c
			bad.token = "wrong-token"
			if c.typ == notificationv1.BitbucketProvider {
				bad.token = "bot:wrong-password"
			}
			host, srv := newHostStandIn(t, c.typ)
			check := func(cfg Config, permanent bool, want string) {
				t.Helper()
				g := NewWithT(t)
				n, err := New(cfg)
				g.Expect(err).NotTo(HaveOccurred())
				err = n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", testSHA))
				g.Expect(err).To(MatchError(ContainSubstring(want)))
				g.Expect(IsPermanent(err)).To(Equal(permanent), err.Error())
				for _, secret := range []string{cfg.Token, testToken, "evil.example", srv.URL, "127.0.0.1"} {
					g.Expect(err.Error()).NotTo(ContainSubstring(secret))
				}
			}
			check(configFor(bad, srv), true, "(the token is not valid)")
			for code, permanent := range map[int]bool{
				http.StatusForbidden:           true,
				http.StatusNotFound:            true,
				http.StatusUnprocessableEntity: true,
				http.StatusTooManyRequests:     false,
				http.StatusInternalServerError: false,
				http.StatusBadGateway:          false,
			} {
				host.answer(code, nil)
				check(configFor(c, srv), permanent, http.StatusText(code))
			}
		})
	}
}

// TestGitHubRateLimitsAre403sRetried: GitHub answers its rate limits with
// 403 and says so in its headers; those are retried, other 403s not.
func TestGitHubRateLimitsAre403sRetried(t *testing.T) {
	g := NewWithT(t)
	host, srv := newHostStandIn(t, notificationv1.GitHubProvider)
	n, _ := New(configFor(contractOf(notificationv1.GitHubProvider), srv))
	post := func() error {
		return n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", testSHA))
	}
	host.answer(http.StatusForbidden, http.Header{"X-Ratelimit-Remaining": {"0"}})
	g.Expect(IsPermanent(post())).To(BeFalse())
	host.answer(http.StatusForbidden, http.Header{"Retry-After": {"60"}})
	g.Expect(IsPermanent(post())).To(BeFalse())
	host.answer(http.StatusForbidden, http.Header{"X-Ratelimit-Remaining": {"4999"}})
	g.Expect(IsPermanent(post())).To(BeTrue())
}

// TestAddressesAndTokensAreCheckedAtReconcile: an address that names no
// repository, or a missing token, fails New (so the Provider is not
// Ready), saying what is expected without quoting the address.
func TestAddressesAndTokensAreCheckedAtReconcile(t *testing.T) {
	for typ, addrs := range map[string][]string{
		notificationv1.GitHubProvider:          {"https://ghe.example.com/org", "https://ghe.example.com/org/repo/tree/main", "https://ghe.example.com/"},
		notificationv1.GitHubDispatchProvider:  {"https://ghe.example.com/org"},
		notificationv1.GitLabProvider:          {"https://gitlab.com/project"},
		notificationv1.GiteaProvider:           {"https://gitea.example.com/repo"},
		notificationv1.BitbucketProvider:       {"https://bitbucket.org/workspace", "https://bitbucket.org/a/b/c"},
		notificationv1.BitbucketServerProvider: {"https://bitbucket.example.com/projects/PROJ/repos/repo", "https://bitbucket.example.com/scm/PROJ"},
		notificationv1.AzureDevOpsProvider:     {"https://dev.azure.com/org/project/repo", "https://dev.azure.com/_git/repo"},
	} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			for _, a := range addrs {
				_, err := New(Config{Type: typ, Address: a, Token: "user:" + testToken})
				g.Expect(err).To(MatchError(ContainSubstring("address must be the repository's URL")), a)
				g.Expect(err.Error()).NotTo(ContainSubstring(a))
			}
		})
	}
	for _, typ := range []string{
		notificationv1.GitHubProvider, notificationv1.GitHubDispatchProvider, notificationv1.GitLabProvider,
		notificationv1.GiteaProvider, notificationv1.BitbucketProvider, notificationv1.BitbucketServerProvider,
		notificationv1.AzureDevOpsProvider,
	} {
		t.Run(typ+" without a token", func(t *testing.T) {
			c := hostContract{typ: typ, address: func(string) string { return "" }}
			if typ != notificationv1.GitHubDispatchProvider {
				c = contractOf(typ)
			}
			cfg := Config{Type: typ, Address: c.address("https://git.example.com")}
			if typ == notificationv1.GitHubDispatchProvider {
				cfg.Address = "https://github.com/org/repo"
			}
			_, err := New(cfg)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(`spec.secretRef with the key "token"`)))
		})
	}
	t.Run("bitbucket token without a password", func(t *testing.T) {
		_, err := New(Config{Type: notificationv1.BitbucketProvider, Address: "https://bitbucket.org/w/r", Token: "only-a-token"})
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("<username>:<app password>")))
	})
}

// TestAPIEndpointsComeFromTheAddress: github.com's API is api.github.com,
// a GitHub Enterprise host's /api/v3; bitbucket.org's api.bitbucket.org;
// Azure DevOps' the organization's (or collection's) _apis.
func TestAPIEndpointsComeFromTheAddress(t *testing.T) {
	g := NewWithT(t)
	var got []string
	// Reads of the current statuses find none; posts are taken.
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.String())
		code := http.StatusCreated
		if r.Method == http.MethodGet {
			code = http.StatusNotFound
		}
		return &http.Response{StatusCode: code, Body: http.NoBody, Header: http.Header{}}, nil
	})}
	for typ, addr := range map[string]string{
		notificationv1.GitHubProvider:          "https://github.com/org/repo.git",
		notificationv1.GitHubDispatchProvider:  "https://ghe.example.com/org/repo",
		notificationv1.GitLabProvider:          "https://gitlab.com/group/project",
		notificationv1.GiteaProvider:           "https://gitea.example.com/owner/repo",
		notificationv1.BitbucketProvider:       "https://user@bitbucket.org/workspace/repo.git",
		notificationv1.BitbucketServerProvider: "https://bitbucket.example.com/scm/PROJ/repo.git",
		notificationv1.AzureDevOpsProvider:     "https://org.visualstudio.com/project/_git/repo",
	} {
		n, err := New(Config{Type: typ, Address: addr, Token: "user:" + testToken, ProviderUID: "0c9e5f1d-2b7a", Client: client})
		g.Expect(err).NotTo(HaveOccurred(), typ)
		g.Expect(n.Post(context.Background(), syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", testSHA))).To(Succeed(), typ)
	}
	g.Expect(got).To(ConsistOf(
		"https://api.github.com/repos/org/repo/statuses/"+testSHA,
		"https://ghe.example.com/api/v3/repos/org/repo/dispatches",
		"https://gitlab.com/api/v4/projects/group%2Fproject/repository/commits/"+testSHA+"/statuses?name="+strings.ReplaceAll(webContext, "/", "%2F"),
		"https://gitlab.com/api/v4/projects/group%2Fproject/statuses/"+testSHA,
		"https://api.github.com/repos/org/repo/commits/"+testSHA+"/status?per_page=100",
		"https://gitea.example.com/api/v1/repos/owner/repo/commits/"+testSHA+"/status?limit=50",
		"https://gitea.example.com/api/v1/repos/owner/repo/statuses/"+testSHA,
		"https://org.visualstudio.com/project/_apis/git/repositories/repo/commits/"+testSHA+"/statuses?latestOnly=true&api-version=7.1",
		"https://api.bitbucket.org/2.0/repositories/workspace/repo/commit/"+testSHA+"/statuses/build",
		"https://bitbucket.example.com/rest/api/latest/projects/PROJ/repos/repo/commits/"+testSHA+"/builds",
		"https://org.visualstudio.com/project/_apis/git/repositories/repo/commits/"+testSHA+"/statuses?api-version=7.1",
	))
}
