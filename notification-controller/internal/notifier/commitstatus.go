package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// commitStatusKinds are the Git hosts that take a commit status: github,
// gitlab, gitea, bitbucket, bitbucketserver, azuredevops, and
// githubdispatch (repository_dispatch events). Each address is the
// repository's URL; the API endpoint is derived from it, and an address
// that names no repository fails in build, so at the Provider's reconcile.
var commitStatusKinds = map[string]kind{
	notificationv1.GitHubProvider:         {build: newGitHub, token: githubToken},
	notificationv1.GitHubDispatchProvider: {build: newGitHubDispatch, token: githubToken},
	notificationv1.GitLabProvider:         {build: newGitLab, token: gitlabToken},
	notificationv1.GiteaProvider:          {build: newGitea, token: giteaToken},
	notificationv1.BitbucketProvider:      {build: newBitbucket, token: bitbucketToken},
	// A token, or the Secret's username and password: no one key is
	// required.
	notificationv1.BitbucketServerProvider: {build: newBitbucketServer},
	notificationv1.AzureDevOpsProvider:     {build: newAzureDevOps, token: azureDevOpsToken},
}

// What the token of each host is.
const (
	githubToken      = "a GitHub token that may write commit statuses"
	gitlabToken      = "a GitLab access token with the api scope"
	giteaToken       = "a Gitea access token with write access to the repository"
	bitbucketToken   = "<username>:<app password>"
	azureDevOpsToken = "a personal access token with the Code (status) scope"
)

// commitStatus is what a host is told about one event, before each host
// puts it in its own words (state names, field names, length limits).
type commitStatus struct {
	// sha is the commit, 40 hex digits.
	sha   string
	state statusState
	// context names the status on the commit: one per object and
	// Provider, so a new event about the object replaces its status and
	// two clusters (two Providers) do not overwrite each other's.
	context string
	// description is the event's message; each host cuts it to its limit.
	description string
}

// statusState is the outcome of a sync, in Plumb's words.
type statusState int

const (
	stateSuccess statusState = iota
	stateFailure
	statePending
)

// progressingReasons are the info events that mean a sync is under way,
// not done: the commit shows pending until the success or failure that
// follows. (Render and apply events are not among them: a revision whose
// sync changes nothing emits no further event, so its commit would stay
// pending.)
var progressingReasons = map[string]bool{
	meta.ProgressingReason:          true,
	meta.ProgressingWithRetryReason: true,
}

// stateOf maps an event to a commit status: an error is a failure, a
// progressing event pending, any other info event a success.
func stateOf(e events.Event) statusState {
	switch {
	case e.Severity == events.SeverityError:
		return stateFailure
	case progressingReasons[e.Reason]:
		return statePending
	default:
		return stateSuccess
	}
}

// statusKinds are the kinds whose events report the sync of a revision.
var statusKinds = map[string]bool{
	kustomizev1.KustomizationKind: true,
	helmv2.HelmReleaseKind:        true,
}

// statusOf says what to post for e, or why nothing is (a *Skipped).
func statusOf(cfg Config, e events.Event) (commitStatus, error) {
	if !statusKinds[e.InvolvedObject.Kind] {
		return commitStatus{}, &Skipped{Why: fmt.Sprintf("a %s event is no sync of a commit (commit statuses report Kustomizations and HelmReleases)", e.InvolvedObject.Kind)}
	}
	sha, err := commitSHA(e.Revision)
	if err != nil {
		return commitStatus{}, err
	}
	return commitStatus{sha: sha, state: stateOf(e), context: statusContext(cfg, e), description: e.Message}, nil
}

var (
	sha1Hex     = regexp.MustCompile(`^[0-9a-f]{40}$`)
	digestInRev = regexp.MustCompile(`@(sha1|sha256):`)
)

// commitSHA takes the commit out of a revision: "<ref>@sha1:<40 hex>"
// (Plumb's and Flux's form), "sha1:<40 hex>", or a bare 40-hex SHA. A
// sha256 revision is an OCI artifact's digest (or a SHA-256 Git
// repository, which none of the hosts takes), an abbreviated SHA names no
// commit for sure: both are skipped.
func commitSHA(revision string) (string, error) {
	if revision == "" {
		return "", &Skipped{Why: "the event names no revision"}
	}
	quoted := fmt.Sprintf("%q", clipRunes(revision, 80))
	rev := strings.ToLower(revision)
	if loc := digestInRev.FindStringIndex(rev); loc != nil {
		rev = rev[loc[0]+1:]
	}
	switch {
	case strings.HasPrefix(rev, "sha256:"):
		return "", &Skipped{Why: "the revision " + quoted + " is a sha256 digest, not a Git commit"}
	case strings.HasPrefix(rev, "sha1:"):
		rev = strings.TrimPrefix(rev, "sha1:")
	}
	if !sha1Hex.MatchString(rev) {
		return "", &Skipped{Why: "the revision " + quoted + " names no full Git commit SHA (40 hex digits)"}
	}
	return rev, nil
}

// maxContext bounds a status context: the hosts store a few hundred
// characters at most, and Kubernetes names may be long.
const maxContext = 100

// statusContext is "<kind>/<namespace>/<name>/<provider>" in lower case,
// the last part the first 8 characters of the Provider's UID (Flux's
// scheme, with the namespace added so two namespaces' objects of one name
// stay apart). A context longer than maxContext keeps its beginning and
// ends in a hash of the whole, so it stays unique.
func statusContext(cfg Config, e events.Event) string {
	o := e.InvolvedObject
	parts := []string{o.Kind, o.Namespace, o.Name}
	if uid := cfg.ProviderUID; uid != "" {
		parts = append(parts, uid[:min(8, len(uid))])
	}
	return boundContext(strings.ToLower(strings.Join(parts, "/")))
}

// boundContext cuts a context longer than maxContext, keeping its
// beginning and ending it in a hash of the whole, so it stays unique.
func boundContext(ctx string) string {
	if len(ctx) <= maxContext {
		return ctx
	}
	sum := sha256.Sum256([]byte(ctx))
	return ctx[:maxContext-9] + "~" + hex.EncodeToString(sum[:4])
}

// repository is a repository's address, split: the URL without user info
// and path, and the path's segments without a trailing ".git".
type repository struct {
	base     *url.URL
	segments []string
	// web is the repository's address without user info, for links.
	web string
}

// parseRepository splits cfg.Address. form says what the address should
// look like, for the error, which does not quote the address.
func parseRepository(cfg Config, form string) (repository, error) {
	u, err := url.Parse(cfg.Address)
	if err != nil || u.Host == "" {
		return repository{}, errWrongForm(cfg.Type, form)
	}
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	path := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	var segments []string
	for _, s := range strings.Split(path, "/") {
		if s == "" {
			return repository{}, errWrongForm(cfg.Type, form)
		}
		segments = append(segments, s)
	}
	web := u.String()
	base := *u
	base.Path, base.RawPath = "", ""
	return repository{base: &base, segments: segments, web: web}, nil
}

// api returns the base URL with path appended (segments already escaped).
func (r repository) api(path string) string {
	return strings.TrimSuffix(r.base.String(), "/") + path
}

// needToken is the error of a host whose Provider has no token.
func needToken(typ, what string) error {
	return fmt.Errorf("a %s provider needs spec.secretRef with the key %q (%s)", typ, TokenKey, what)
}

// statusPoster posts a commitStatus to one host.
type statusPoster interface {
	// post sends st once; a nil error means the host shows it.
	post(ctx context.Context, st commitStatus) error
}

// statusReader is a host whose statuses accumulate (each post adds one;
// GitHub refuses more than 1000 per commit and context) or that refuses a
// repeat (GitLab): it is asked first whether the commit already shows st.
// Bitbucket's statuses are keyed and replaced in place: it is not asked.
type statusReader interface {
	// shows reports whether the commit's latest status of st's context
	// has st's state and description. It is a saving, not a check: any
	// failure to read says false, and the status is posted.
	shows(ctx context.Context, st commitStatus) bool
}

// commitStatusNotifier is the Notifier of every commit status host: it
// decides what to post (or skips), and the host posts it unless the
// commit already shows it.
type commitStatusNotifier struct {
	cfg  Config
	host statusPoster
	// expr, when set, names the status instead of statusContext.
	expr *statusExpr
}

func (n *commitStatusNotifier) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	st, err := statusOf(n.cfg, e)
	if err != nil {
		return err
	}
	if n.expr != nil {
		if st.context, err = n.expr.context(ctx, e); err != nil {
			return err
		}
	}
	if r, ok := n.host.(statusReader); ok && r.shows(ctx, st) {
		return nil
	}
	return n.host.post(ctx, st)
}

// shownStatus is a status as a host lists it.
type shownStatus struct{ context, state, description string }

// latestIs reports whether the first status of want's context in list,
// the host's latest of that context, equals want.
func latestIs(list []shownStatus, want shownStatus) bool {
	for _, s := range list {
		if s.context == want.context {
			return s == want
		}
	}
	return false
}

// errWrongForm says an address does not have the form its type needs.
func errWrongForm(typ, form string) error {
	return fmt.Errorf("a %s provider's address must be the repository's URL, %s", typ, form)
}

// combinedShows reads a combined status, the latest status of each
// context as GitHub and Gitea answer it (Gitea names the state "status"),
// and reports whether it shows want.
func combinedShows(ctx context.Context, cfg Config, get hostCall, want shownStatus) bool {
	var combined struct {
		Statuses []struct {
			State       string `json:"state"`
			Status      string `json:"status"`
			Description string `json:"description"`
			Context     string `json:"context"`
		} `json:"statuses"`
	}
	get.into = &combined
	if call(ctx, cfg, get) != nil {
		return false
	}
	list := make([]shownStatus, len(combined.Statuses))
	for i, s := range combined.Statuses {
		// One of State and Status is empty: whichever the host names.
		list[i] = shownStatus{s.Context, s.State + s.Status, s.Description}
	}
	return latestIs(list, want)
}
