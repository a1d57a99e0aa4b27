package objectset

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/pullrequest"
)

// maxTokenBytes bounds a token read from a Secret.
const maxTokenBytes = 8 << 10

// slugMax is the length of a branch's slug (Argo CD's): room for a prefix
// and the pull request's number in a 63-character name.
const slugMax = 50

// pullRequests gives an element per pull request of the generator's
// repository that passes its filters, with Argo CD's goTemplate names.
// Stalled (InvalidSpec) for a filter that is no regular expression or an
// API URL that cannot be used; any failure to list (the host's answer, a
// refused address, a bound passed, the token's Secret) is retried
// (PullRequestListFailed) and changes nothing: the objects of the pull
// requests last listed stay.
func (g *generators) pullRequests(ctx context.Context, set *setv1.ObjectSet, gen *setv1.PullRequestGenerator) ([]Element, error) {
	filters, err := compileFilters(gen.Filters)
	if err != nil {
		return nil, reconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("pullRequests.filters: %w", err))
	}
	repo, err := g.repository(ctx, set, gen)
	if err != nil {
		return nil, err
	}
	if g.PullRequests == nil {
		return nil, reconcile.Stalled(setv1.PullRequestListFailedReason, errors.New("sync-controller has no client for pull requests"))
	}
	prs, err := g.PullRequests.List(ctx, repo)
	if err != nil {
		var invalid *pullrequest.InvalidError
		if errors.As(err, &invalid) {
			return nil, reconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("pullRequests.%s: %w", repo.Host, err))
		}
		return nil, reconcile.Failed(setv1.PullRequestListFailedReason, fmt.Errorf("pullRequests.%s: %w", repo.Host, err))
	}
	var out []Element
	for _, pr := range prs {
		if matchesAny(filters, pr) {
			out = append(out, pullRequestElement(pr))
		}
	}
	return out, nil
}

// repository is the generator's host, with its token read from the
// set's namespace.
func (g *generators) repository(ctx context.Context, set *setv1.ObjectSet, gen *setv1.PullRequestGenerator) (pullrequest.Repository, error) {
	var repo pullrequest.Repository
	var ref *setv1.SecretKeyRef
	switch {
	case gen.GitHub != nil:
		h := gen.GitHub
		repo = pullrequest.Repository{Host: pullrequest.GitHub, API: h.API, Owner: h.Owner, Repo: h.Repo, Labels: h.Labels}
		ref = h.TokenRef
	case gen.GitLab != nil:
		h := gen.GitLab
		repo = pullrequest.Repository{Host: pullrequest.GitLab, API: h.API, Project: h.Project, Labels: h.Labels, State: h.PullRequestState}
		ref = h.TokenRef
	case gen.Gitea != nil:
		h := gen.Gitea
		repo = pullrequest.Repository{Host: pullrequest.Gitea, API: h.API, Owner: h.Owner, Repo: h.Repo, Labels: h.Labels}
		ref = h.TokenRef
	default:
		return repo, reconcile.Stalled(meta.InvalidSpecReason, errors.New("pullRequests sets none of github, gitlab and gitea"))
	}
	if ref == nil {
		return repo, nil
	}
	token, err := g.token(ctx, set.Namespace, ref)
	if err != nil {
		return repo, reconcile.Failed(setv1.PullRequestListFailedReason, fmt.Errorf("pullRequests.%s.tokenRef: %w", repo.Host, err))
	}
	repo.Token = token
	return repo, nil
}

// token reads a token from a Secret of the set's namespace (a tokenRef
// has no namespace of its own), uncached: Secrets are not watched.
func (g *generators) token(ctx context.Context, namespace string, ref *setv1.SecretKeyRef) (string, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: namespace, Name: ref.SecretName}
	if err := g.Reader.Get(ctx, key, &s); err != nil {
		return "", fmt.Errorf("reading Secret %s: %w", key, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("key %q missing from Secret %s", ref.Key, key)
	}
	if len(v) > maxTokenBytes {
		return "", fmt.Errorf("the token in Secret %s, key %q, is longer than %d bytes", key, ref.Key, maxTokenBytes)
	}
	t := strings.TrimSpace(string(v))
	if t == "" || strings.ContainsAny(t, "\r\n\x00") {
		return "", fmt.Errorf("the token in Secret %s, key %q, is empty or spans lines", key, ref.Key)
	}
	return t, nil
}

// filter is a compiled PullRequestFilter; a nil expression matches all.
type filter struct{ branch, target *regexp.Regexp }

func compileFilters(fs []setv1.PullRequestFilter) ([]filter, error) {
	out := make([]filter, 0, len(fs))
	for i, f := range fs {
		var c filter
		var err error
		if f.BranchMatch != "" {
			if c.branch, err = regexp.Compile(f.BranchMatch); err != nil {
				return nil, fmt.Errorf("[%d].branchMatch: %w", i, err)
			}
		}
		if f.TargetBranchMatch != "" {
			if c.target, err = regexp.Compile(f.TargetBranchMatch); err != nil {
				return nil, fmt.Errorf("[%d].targetBranchMatch: %w", i, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// matchesAny: no filters keep every pull request; else one filter must
// match both its branches (Argo CD's rule).
func matchesAny(fs []filter, pr pullrequest.PullRequest) bool {
	if len(fs) == 0 {
		return true
	}
	for _, f := range fs {
		if (f.branch == nil || f.branch.MatchString(pr.Branch)) && (f.target == nil || f.target.MatchString(pr.TargetBranch)) {
			return true
		}
	}
	return false
}

// pullRequestElement is the template's data of a pull request: Argo CD's
// names (its number a string, as Argo CD gives it).
func pullRequestElement(pr pullrequest.PullRequest) Element {
	labels := make([]any, 0, len(pr.Labels))
	for _, l := range pr.Labels {
		labels = append(labels, l)
	}
	return Element{
		"number":             strconv.FormatInt(pr.Number, 10),
		"title":              pr.Title,
		"branch":             pr.Branch,
		"branch_slug":        slug(pr.Branch),
		"target_branch":      pr.TargetBranch,
		"target_branch_slug": slug(pr.TargetBranch),
		"head_sha":           pr.HeadSHA,
		"head_short_sha":     prefix(pr.HeadSHA, 8),
		"head_short_sha_7":   prefix(pr.HeadSHA, 7),
		"author":             pr.Author,
		"labels":             labels,
	}
}

// slug is s for a DNS label: lower case, each run of other characters
// than a-z and 0-9 as one "-", no "-" at either end, at most slugMax.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > slugMax {
		out = strings.TrimRight(out[:slugMax], "-")
	}
	return out
}

func prefix(s string, n int) string {
	if len(s) < n {
		return s
	}
	return s[:n]
}

// pullRequestPoll is how often a set with pullRequests generators comes
// back after a success: the shortest of their requeueAfterSeconds
// (default 30 minutes), 0 for a set with none.
func pullRequestPoll(set *setv1.ObjectSet) time.Duration {
	var d time.Duration
	each := func(p *setv1.PullRequestGenerator) {
		if p == nil {
			return
		}
		s := int64(setv1.DefaultPullRequestRequeueAfterSeconds)
		if p.RequeueAfterSeconds != nil {
			s = *p.RequeueAfterSeconds
		}
		if v := time.Duration(s) * time.Second; v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	for _, g := range set.Spec.Generators {
		each(g.PullRequests)
		for _, c := range childrenOf(g) {
			each(c.PullRequests)
		}
	}
	return d
}

// pollPullRequests brings res forward to the set's pull request poll
// when that is sooner than spec.interval, after a success (a failure
// keeps its own retry).
func pollPullRequests(set *setv1.ObjectSet, res ctrl.Result, err error) (ctrl.Result, error) {
	d := pullRequestPoll(set)
	if err != nil || d == 0 || res.RequeueAfter == 0 || set.Spec.Interval.Duration <= d {
		return res, err
	}
	res.RequeueAfter = reconcile.Jitter(d)
	return res, nil
}
