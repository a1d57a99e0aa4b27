package notifier

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// commentKinds are the change request comment providers, Flux's:
// githubpullrequestcomment, gitlabmergerequestcomment and
// giteapullrequestcomment. Each keeps one comment per object on the pull
// or merge request whose number the object's
// event.toolkit.fluxcd.io/change_request annotation gives (the event's
// change_request metadata), and edits it on each event. The address is
// the repository's URL, as for the host's commit statuses, whose API
// base (commenthosts.go) and stand-ins they share.
var commentKinds = map[string]kind{
	notificationv1.GitHubPullRequestCommentProvider:  {build: newGitHubComments, token: githubCommentToken},
	notificationv1.GitLabMergeRequestCommentProvider: {build: newGitLabComments, token: gitlabToken},
	notificationv1.GiteaPullRequestCommentProvider:   {build: newGiteaComments, token: giteaCommentToken},
}

// What the comment providers' tokens must be allowed.
const (
	githubCommentToken = "a GitHub token that may write pull request comments"
	giteaCommentToken  = "a Gitea access token with the write:issue and read:user scopes"
)

// hostComment is a comment as a host lists it.
type hostComment struct {
	id     int64
	author string
	body   string
}

// commentHost is one host's API of change request comments.
type commentHost interface {
	// me returns the name of the token's user, the author of the
	// comments this provider wrote.
	me(ctx context.Context) (string, error)
	// list returns the first page of the change request's comments,
	// oldest first.
	list(ctx context.Context, number int64) ([]hostComment, error)
	create(ctx context.Context, number int64, body string) error
	edit(ctx context.Context, number, id int64, body string) error
}

// commentNotifier keeps one comment per object on a change request: it
// finds the comment its marker names among those the token's user wrote,
// and edits it, or writes it the first time.
type commentNotifier struct {
	cfg  Config
	host commentHost

	// login is the token's user, asked once per notifier (the
	// dispatcher rebuilds it when the Provider or its Secret changes).
	mu    sync.Mutex
	login string
}

func (n *commentNotifier) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	number, err := changeRequest(e)
	if err != nil {
		return err
	}
	login, err := n.me(ctx)
	if err != nil {
		return err
	}
	comments, err := n.host.list(ctx, number)
	if err != nil {
		return err
	}
	marker := commentMarker(n.cfg, e)
	body := commentBody(marker, e)
	for _, c := range comments {
		// Only the token's user's own comments: anyone may quote the
		// marker, and another user's comment cannot be edited anyway.
		if c.author == login && strings.Contains(c.body, marker) {
			if c.body == body {
				return nil
			}
			return n.host.edit(ctx, number, c.id, body)
		}
	}
	return n.host.create(ctx, number, body)
}

func (n *commentNotifier) me(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.login != "" {
		return n.login, nil
	}
	login, err := n.host.me(ctx)
	if err != nil {
		return "", err
	}
	if login == "" {
		return "", fmt.Errorf("the %s API named no user for the token", n.cfg.Type)
	}
	n.login = login
	return login, nil
}

// changeRequest reads the change request's number from the event, or
// says why there is none: an object without the annotation is skipped, as
// in Flux (an Alert may route every object to this provider); a value
// that is no number fails at once, so its Alert shows it.
func changeRequest(e events.Event) (int64, error) {
	v, ok := e.Metadata[events.ChangeRequestKey]
	if !ok || v == "" {
		return 0, &Skipped{Why: fmt.Sprintf("the event has no %s metadata: %s %s/%s has no %s annotation",
			events.ChangeRequestKey, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, events.AnnotationPrefix+events.ChangeRequestKey)}
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), "#"), 10, 64)
	if err != nil || n <= 0 {
		return 0, &PermanentError{Err: fmt.Errorf("the %s annotation of %s %s/%s is %q, not a pull or merge request number",
			events.AnnotationPrefix+events.ChangeRequestKey, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, clipRunes(v, 40))}
	}
	return n, nil
}

// commentMarker identifies an object's comment through one Provider: an
// HTML comment, which the hosts do not show, naming the Provider's UID
// and the object (Flux's scheme, under Plumb's name).
func commentMarker(cfg Config, e events.Event) string {
	o := e.InvolvedObject
	return fmt.Sprintf("<!-- plumb-comment-key:%s/%s/%s/%s -->", cfg.ProviderUID, o.Kind, o.Namespace, o.Name)
}

// maxCommentBytes keeps a comment under GitHub's limit of 65536
// characters (GitLab and Gitea take more).
const maxCommentBytes = 60000

// commentMarkdown is the hosts' Markdown with what the event's text could
// use to act escaped: emphasis, links, headings and quotes, and '<',
// which could start HTML or a forged marker.
var commentMarkdown = markup{escape: func(r rune) string {
	if r == '<' {
		return "&lt;"
	}
	return markdownRune(r)
}, bold: [2]string{"**", "**"}, newline: "\n\n"}

// mention is an '@' the hosts read as a mention: not after a letter or
// digit (user@host is none), before a name.
var mention = regexp.MustCompile(`(^|[^0-9A-Za-z_])@([0-9A-Za-z_])`)

// noMentions puts a word joiner after each mention's '@', so a commit
// message cannot notify a user or team; it reads the same.
func noMentions(s string) string { return mention.ReplaceAllString(s, "${1}@\u2060${2}") }

// commentBody is the comment about e: the marker, then Flux's layout (a
// status heading, the severity's emoji with the object, the message, the
// facts) in Markdown. The change request's number is left out: the
// comment is on it.
func commentBody(marker string, e events.Event) string {
	emoji := "ℹ️"
	if e.Severity == events.SeverityError {
		emoji = "⚠️"
	}
	o := e.InvolvedObject
	lines := []line{{bold: fmt.Sprintf("%s %s/%s/%s", emoji, o.Kind, o.Namespace, o.Name)}}
	if e.Reason != "" {
		lines[0].bold += ": " + e.Reason
	}
	if e.Message != "" {
		lines = append(lines, line{text: noMentions(e.Message)})
	}
	meta := e.Metadata
	if _, ok := meta[events.ChangeRequestKey]; ok {
		meta = make(map[string]string, len(e.Metadata))
		for k, v := range e.Metadata {
			if k != events.ChangeRequestKey {
				meta[k] = v
			}
		}
	}
	e.Metadata = meta
	for _, f := range facts(e) {
		// The space after the bold: "**a: **" is no bold in CommonMark.
		lines = append(lines, line{bold: noMentions(f.Title) + ":", text: " " + noMentions(f.Value)})
	}
	head := marker + "\n\n## Plumb status\n\n"
	return head + commentMarkdown.render(lines, maxCommentBytes-len(head))
}
