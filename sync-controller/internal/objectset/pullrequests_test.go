package objectset

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/sync-controller/internal/pullrequest/pullrequesttest"
)

// previewTemplate renders a preview environment per pull request: a
// GitRepository of its branch and a Kustomization of it.
const previewTemplate = `
apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata:
  name: pr-{{ .number }}
  labels:
    author: {{ .author }}
spec:
  interval: 5m
  url: https://git.example.com/acme/shop.git
  ref:
    branch: {{ .branch }}
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: pr-{{ .number }}-{{ .branch_slug }}
  annotations:
    preview/sha: "{{ .head_sha }}"
    preview/short: "{{ .head_short_sha }}"
    preview/target: "{{ .target_branch }}"
    preview/title: {{ quote .title }}
    preview/labels: "{{ range .labels }}{{ . }};{{ end }}"
spec:
  interval: 5m
  path: ./deploy/preview
  prune: true
  targetNamespace: preview-{{ .number }}
  sourceRef:
    kind: GitRepository
    name: pr-{{ .number }}
`

func pr(n int64, branch string, labels ...string) pullrequesttest.PR {
	return pullrequesttest.PR{Number: n, Title: fmt.Sprintf("Change #%d: \"quoted\"", n), Branch: branch, TargetBranch: "main",
		SHA: fmt.Sprintf("%02dabcdef0123456789abcdef0123456789abcd", n), Author: "alice", Labels: labels}
}

// tokenSecret creates the Secret holding the stand-in's token.
func tokenSecret(t *testing.T, ns, token string) *setv1.SecretKeyRef {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-host"}, StringData: map[string]string{"token": token + "\n"}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return &setv1.SecretKeyRef{SecretName: "git-host", Key: "token"}
}

func gitRepo(ns, name string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// Each open pull request of a GitHub repository that carries the label
// becomes a GitRepository and a Kustomization (Argo CD's element names),
// read across the pages the Link header names; the one that closes takes
// its objects with it.
func TestOpenPullRequestsBecomePreviewsAndAClosedOneIsPruned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	host := pullrequesttest.Start(t, pullrequesttest.GitHub, "ghp_token")
	host.SetOpen(pr(1, "feature/Login_Page", "preview"), pr(2, "fix-2", "preview"), pr(3, "wip"), pr(4, "docs", "preview"), pr(5, "perf", "preview"))
	set := newSet(ns, "previews", previewTemplate, setv1.Generator{PullRequests: &setv1.PullRequestGenerator{
		GitHub: &setv1.PullRequestGitHub{Owner: host.Owner, Repo: host.Repo, API: host.URL, TokenRef: tokenSecret(t, ns, "ghp_token"),
			Labels: []string{"preview"}},
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	got := waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(4))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(8))
	g.Expect(host.Requests()).To(HaveLen(3), "five pull requests, two a page")

	k := kustomization(ns, "pr-1-feature-login-page")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(k), k)).To(Succeed())
	g.Expect(k.Annotations).To(Equal(map[string]string{
		"preview/sha": "01abcdef0123456789abcdef0123456789abcd", "preview/short": "01abcdef",
		"preview/target": "main", "preview/title": `Change #1: "quoted"`, "preview/labels": "preview;",
	}))
	g.Expect(k.Spec.TargetNamespace).To(Equal("preview-1"))
	repo := gitRepo(ns, "pr-1")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	g.Expect(repo.Spec.Reference.Branch).To(Equal("feature/Login_Page"))
	g.Expect(repo.Labels).To(HaveKeyWithValue("author", "alice"))
	gone(g, gitRepo(ns, "pr-3"))

	// Pull request 2 is merged: it is no longer open.
	host.SetOpen(pr(1, "feature/Login_Page", "preview"), pr(3, "wip"), pr(4, "docs", "preview"), pr(5, "perf", "preview"))
	requestReconcile(t, set)
	g.Eventually(func(g Gomega) {
		gone(g, gitRepo(ns, "pr-2"))
		gone(g, kustomization(ns, "pr-2-fix-2"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	got = waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(3))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization(ns, "pr-5-perf")), kustomization(ns, "pr-5-perf"))).To(Succeed())
	g.Expect(recorded.of(set, setv1.ObjectsPrunedReason)).To(ContainElement(ContainSubstring("GitRepository/" + ns + "/pr-2")))

	// Every pull request closed would prune all: the prune guard holds it.
	host.SetOpen()
	requestReconcile(t, set)
	g.Eventually(func(g Gomega) {
		got := &setv1.ObjectSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(set.Annotations[meta.ReconcileRequestAnnotation]))
		c := readyOf(got)
		g.Expect(c.Reason).To(Equal(kustomizev1.PruneGuardedReason), c.Message)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gitRepo(ns, "pr-1")), gitRepo(ns, "pr-1"))).To(Succeed())
}

// GitLab's merge requests are listed with PRIVATE-TOKEN, the project's
// path encoded, the labels asked of GitLab and its X-Next-Page followed;
// filters keep those whose branches match one filter.
func TestGitLabMergeRequestsAreFilteredByBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	host := pullrequesttest.Start(t, pullrequesttest.GitLab, "glpat-token")
	host.SetOpen(pr(11, "feature-a", "preview"), pr(12, "release-1", "preview"), pr(13, "feature-b"), pr(14, "feature-c", "preview"))
	set := newSet(ns, "mrs", previewTemplate, setv1.Generator{PullRequests: &setv1.PullRequestGenerator{
		GitLab: &setv1.PullRequestGitLab{Project: host.Project, API: host.URL, TokenRef: tokenSecret(t, ns, "glpat-token"),
			Labels: []string{"preview"}, PullRequestState: "opened"},
		Filters: []setv1.PullRequestFilter{{BranchMatch: "^feature-", TargetBranchMatch: "^main$"}},
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	got := waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(2))
	for _, name := range []string{"pr-11-feature-a", "pr-14-feature-c"} {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization(ns, name)), kustomization(ns, name))).To(Succeed())
	}
	gone(g, gitRepo(ns, "pr-12"))
	gone(g, gitRepo(ns, "pr-13"))
	g.Expect(host.Requests()).To(ContainElement(ContainSubstring("/api/v4/projects/acme%2Fshop/merge_requests?labels=preview&page=2&per_page=100&state=opened")))
}

// Gitea's pull requests are read page by page with "Authorization:
// token".
func TestGiteaPullRequestsBecomeObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	host := pullrequesttest.Start(t, pullrequesttest.Gitea, "gitea-token")
	host.SetOpen(pr(21, "a"), pr(22, "b"), pr(23, "c"))
	set := newSet(ns, "gitea", previewTemplate, setv1.Generator{PullRequests: &setv1.PullRequestGenerator{
		Gitea:               &setv1.PullRequestGitea{Owner: host.Owner, Repo: host.Repo, API: host.URL, TokenRef: tokenSecret(t, ns, "gitea-token")},
		RequeueAfterSeconds: ptr.To[int64](60),
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	got := waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(3))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization(ns, "pr-23-c")), kustomization(ns, "pr-23-c"))).To(Succeed())
	g.Expect(host.Requests()).To(HaveLen(3), "two full pages and an empty one")
}

// A host that fails (a 500, a wrong token, an answer over the page
// bound) leaves the objects of the pull requests last listed in place
// and says why in Ready and an event.
func TestAFailingPullRequestAPIKeepsThePreviews(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	host := pullrequesttest.Start(t, pullrequesttest.GitHub, "ghp_token")
	host.SetOpen(pr(1, "one"), pr(2, "two"))
	set := newSet(ns, "flaky", previewTemplate, setv1.Generator{PullRequests: &setv1.PullRequestGenerator{
		GitHub: &setv1.PullRequestGitHub{Owner: host.Owner, Repo: host.Repo, API: host.URL, TokenRef: tokenSecret(t, ns, "ghp_token")},
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	waitReady(t, g, set, "True", meta.SucceededReason)

	for _, tc := range []struct {
		name    string
		breakIt func()
		says    string
	}{
		{"500", func() { host.Fail(http.StatusInternalServerError) }, "500 Internal Server Error"},
		{"oversized", func() { host.Fail(0); host.Pad(testMaxPageBytes) }, fmt.Sprintf("larger than %d bytes", testMaxPageBytes)},
		{"wrong token", func() { host.Pad(0); host.SetToken("rotated") }, "401 Unauthorized"},
	} {
		tc.breakIt()
		host.SetOpen() // were the answer read, everything would be pruned
		requestReconcile(t, set)
		g.Eventually(func(g Gomega) {
			got := &setv1.ObjectSet{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal(set.Annotations[meta.ReconcileRequestAnnotation]))
			c := readyOf(got)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), tc.name)
			g.Expect(c.Reason).To(Equal(setv1.PullRequestListFailedReason), tc.name)
			g.Expect(c.Message).To(ContainSubstring(tc.says), tc.name)
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		for _, name := range []string{"pr-1", "pr-2"} {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gitRepo(ns, name)), gitRepo(ns, name))).To(Succeed(), tc.name)
		}
		g.Expect(recorded.of(set, setv1.PullRequestListFailedReason)).To(ContainElement(ContainSubstring(tc.says)), tc.name)
		host.SetOpen(pr(1, "one"), pr(2, "two"))
	}
	g.Expect(recorded.of(set, setv1.ObjectsPrunedReason)).To(BeEmpty())
}

// A filter that is no regular expression stalls the set (InvalidSpec)
// before any request.
func TestABadBranchFilterStallsTheSet(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	host := pullrequesttest.Start(t, pullrequesttest.GitHub, "")
	set := newSet(ns, "bad-filter", previewTemplate, setv1.Generator{PullRequests: &setv1.PullRequestGenerator{
		GitHub:  &setv1.PullRequestGitHub{Owner: host.Owner, Repo: host.Repo, API: host.URL},
		Filters: []setv1.PullRequestFilter{{BranchMatch: "feature-("}},
	}})
	g.Expect(env.Client.Create(context.Background(), set)).To(Succeed())
	got := waitReady(t, g, set, "False", meta.InvalidSpecReason)
	g.Expect(readyOf(got).Message).To(ContainSubstring("branchMatch"))
	g.Expect(host.Requests()).To(BeEmpty())
}

// requestReconcile sets a new reconcile.plumb.dev/requestedAt on set
// (and on the given copy, for the caller to compare).
func requestReconcile(t *testing.T, set *setv1.ObjectSet) {
	t.Helper()
	ctx := context.Background()
	cur := &setv1.ObjectSet{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[meta.ReconcileRequestAnnotation] = strings.ReplaceAll(time.Now().Format(time.RFC3339Nano), ":", "-")
	if err := env.Client.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	set.Annotations = cur.Annotations
}

func readyOf(set *setv1.ObjectSet) metav1.Condition {
	for _, c := range set.Status.Conditions {
		if c.Type == meta.ReadyCondition {
			return c
		}
	}
	return metav1.Condition{}
}

// A set with a pullRequests generator comes back after the shortest of
// spec.interval and the generators' requeueAfterSeconds (30 minutes by
// default); a failure keeps its own retry, and a set without one its
// interval.
func TestPullRequestGeneratorsBringTheSetBackSooner(t *testing.T) {
	g := NewWithT(t)
	gen := func(secs *int64) setv1.Generator {
		return setv1.Generator{PullRequests: &setv1.PullRequestGenerator{GitHub: &setv1.PullRequestGitHub{Owner: "o", Repo: "r"}, RequeueAfterSeconds: secs}}
	}
	withInterval := func(d time.Duration, gens ...setv1.Generator) *setv1.ObjectSet {
		s := newSet("ns", "s", "x", gens...)
		s.Spec.Interval = metav1.Duration{Duration: d}
		return s
	}
	within := func(d time.Duration) OmegaMatcher {
		return And(BeNumerically(">=", d-d/10), BeNumerically("<=", d+d/10))
	}
	hour := ctrl.Result{RequeueAfter: time.Hour}

	res, err := pollPullRequests(withInterval(time.Hour, gen(ptr.To[int64](60))), hour, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(within(time.Minute))

	res, _ = pollPullRequests(withInterval(time.Hour, gen(nil)), hour, nil)
	g.Expect(res.RequeueAfter).To(within(30 * time.Minute))

	res, _ = pollPullRequests(withInterval(time.Hour, setv1.Generator{Matrix: &setv1.MatrixGenerator{Generators: []setv1.ChildGenerator{
		{List: listOf("a")}, {PullRequests: gen(ptr.To[int64](120)).PullRequests},
	}}}, gen(ptr.To[int64](600))), hour, nil)
	g.Expect(res.RequeueAfter).To(within(2*time.Minute), "a matrix child counts too")

	res, _ = pollPullRequests(withInterval(10*time.Minute, gen(nil)), ctrl.Result{RequeueAfter: 10 * time.Minute}, nil)
	g.Expect(res.RequeueAfter).To(Equal(10*time.Minute), "the interval is sooner")

	res, _ = pollPullRequests(withInterval(time.Hour, setv1.Generator{List: listOf("a")}), hour, nil)
	g.Expect(res.RequeueAfter).To(Equal(time.Hour))

	failed := fmt.Errorf("listing failed")
	res, err = pollPullRequests(withInterval(time.Hour, gen(ptr.To[int64](60))), ctrl.Result{}, failed)
	g.Expect(err).To(Equal(failed))
	g.Expect(res).To(Equal(ctrl.Result{}))
}

// branch_slug is a DNS label's worth of the branch, as Argo CD's.
func TestBranchSlugs(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]string{
		"feature/Login_Page":      "feature-login-page",
		"--fix--":                 "fix",
		"release/v1.2":            "release-v1-2",
		"ünïcode":                 "n-code",
		strings.Repeat("ab-", 30): "ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab",
		"main":                    "main",
	} {
		g.Expect(slug(in)).To(Equal(want), in)
	}
}
