package notifier

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// prEvent is a sync event about apps/<name> for change request 42, as the
// dispatcher sends it: the annotation's key without its prefix.
func prEvent(name string, sev events.Severity, reason, message string) events.Event {
	e := syncEvent(sev, reason, message, "preview@sha1:"+testSHA)
	e.InvolvedObject.Name = name
	e.Metadata = map[string]string{events.ChangeRequestKey: "42", "cluster": "preview-eu"}
	return e
}

// The marker of apps/web's comment through the test Provider.
const webMarker = "<!-- plumb-comment-key:0c9e5f1d-2b7a-4c61-9d7e-0a1b2c3d4e5f/Kustomization/apps/web -->"

// TestCommentProvidersKeepOneCommentPerObject: on each host's stand-in,
// the first event about an object writes a comment on change request 42,
// the next edits that comment, the same event again changes nothing, and
// another object gets a comment of its own. A comment of someone else
// that quotes the marker is left alone; the token's user is asked once.
func TestCommentProvidersKeepOneCommentPerObject(t *testing.T) {
	for _, c := range commentContracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host := newCommentStandIn(t, c.typ)
			host.seed("42", "reviewer", "LGTM")
			host.seed("42", "mallory", "quoting "+webMarker)
			n, err := New(commentConfig(c, host.Server))
			g.Expect(err).NotTo(HaveOccurred())
			ctx := context.Background()

			g.Expect(n.Post(ctx, prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, "revision preview: 2 created"))).To(Succeed())
			mine := func() []storedComment {
				var out []storedComment
				for _, s := range host.of("42") {
					if s.author == botLogin {
						out = append(out, s)
					}
				}
				return out
			}
			g.Expect(mine()).To(HaveLen(1))
			first := mine()[0]
			g.Expect(first.body).To(HavePrefix(webMarker + "\n\n## Plumb status\n\n"))
			g.Expect(first.body).To(ContainSubstring("**ℹ️ Kustomization/apps/web: " + kustomizev1.AppliedReason + "**"))
			g.Expect(first.body).To(ContainSubstring("revision preview: 2 created"))
			g.Expect(first.body).To(ContainSubstring("**Revision:** preview@sha1:" + testSHA))
			g.Expect(first.body).To(ContainSubstring("**cluster:** preview-eu"))
			g.Expect(first.body).NotTo(ContainSubstring(events.ChangeRequestKey), "the comment is on the change request")

			g.Expect(n.Post(ctx, prEvent("web", events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/apps/web is Degraded"))).To(Succeed())
			g.Expect(mine()).To(HaveLen(1), "edited, not written again")
			edited := mine()[0]
			g.Expect(edited.id).To(Equal(first.id))
			g.Expect(edited.updated).To(Equal(1))
			g.Expect(edited.body).To(ContainSubstring("**⚠️ Kustomization/apps/web: " + kustomizev1.HealthDegradedReason + "**"))
			g.Expect(edited.body).To(ContainSubstring("Deployment/apps/web is Degraded"))
			g.Expect(host.of("42")[1].body).To(Equal("quoting "+webMarker), "another user's comment is left alone")

			before := host.count()
			g.Expect(n.Post(ctx, prEvent("web", events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/apps/web is Degraded"))).To(Succeed())
			g.Expect(host.count()).To(Equal(before+1), "the same comment again: listed, not edited")
			g.Expect(mine()[0].updated).To(Equal(1))

			g.Expect(n.Post(ctx, prEvent("api", events.SeverityInfo, kustomizev1.AppliedReason, "revision preview: 1 created"))).To(Succeed())
			g.Expect(mine()).To(HaveLen(2), "one comment per object")
			g.Expect(mine()[1].body).To(ContainSubstring("/Kustomization/apps/api -->"))

			users := 0
			for _, r := range host.requests() {
				if r.URL.Path == c.user {
					users++
				}
			}
			g.Expect(users).To(Equal(1), "the token's user is asked once")
		})
	}
}

// TestCommentProvidersSkipAnEventWithoutAChangeRequest: an event about an
// object without the change_request annotation is skipped, saying so,
// and nothing is sent; a value that is no number fails at once.
func TestCommentProvidersSkipAnEventWithoutAChangeRequest(t *testing.T) {
	for _, c := range commentContracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host := newCommentStandIn(t, c.typ)
			n, err := New(commentConfig(c, host.Server))
			g.Expect(err).NotTo(HaveOccurred())

			e := prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, "applied")
			delete(e.Metadata, events.ChangeRequestKey)
			err = n.Post(context.Background(), e)
			g.Expect(IsSkipped(err)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError("skipped: the event has no change_request metadata: Kustomization apps/web has no event.toolkit.fluxcd.io/change_request annotation"))

			e.Metadata[events.ChangeRequestKey] = "feature-branch"
			err = n.Post(context.Background(), e)
			g.Expect(IsPermanent(err)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError(`the event.toolkit.fluxcd.io/change_request annotation of Kustomization apps/web is "feature-branch", not a pull or merge request number`))
			g.Expect(host.count()).To(BeZero())
		})
	}
}

// TestCommentProvidersReportTheHostsRefusal: a bad token, and a change
// request the host does not have, fail at once with the host's status
// code and a hint, never its words.
func TestCommentProvidersReportTheHostsRefusal(t *testing.T) {
	for _, c := range commentContracts {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			host := newCommentStandIn(t, c.typ)
			cfg := commentConfig(c, host.Server)
			cfg.Token = "wrong"
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, "applied"))
			g.Expect(err).To(MatchError("the " + c.typ + " API answered 401 Unauthorized (the token is not valid)"))
			g.Expect(IsPermanent(err)).To(BeTrue())

			n, err = New(commentConfig(c, host.Server))
			g.Expect(err).NotTo(HaveOccurred())
			host.answer(http.StatusNotFound, nil)
			err = n.Post(context.Background(), prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, "applied"))
			g.Expect(err).To(MatchError("the " + c.typ + " API answered 404 Not Found (no such repository or pull or merge request, or the token cannot see it)"))
			g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
		})
	}
}

// TestCommentProvidersNeedARepositoryAndAToken: an address that names no
// repository, or no token, fails New, at the Provider's reconcile.
func TestCommentProvidersNeedARepositoryAndAToken(t *testing.T) {
	g := NewWithT(t)
	for typ, address := range map[string]string{
		notificationv1.GitHubPullRequestCommentProvider:  "https://github.com/org",
		notificationv1.GitLabMergeRequestCommentProvider: "https://gitlab.com/project",
		notificationv1.GiteaPullRequestCommentProvider:   "https://gitea.example.com/repo",
	} {
		_, err := New(Config{Type: typ, Address: address, Token: testToken})
		g.Expect(err).To(MatchError(ContainSubstring("address must be the repository's URL")), typ)
		_, err = New(Config{Type: typ, Address: address + "/repo"})
		g.Expect(err).To(MatchError(ContainSubstring(`needs spec.secretRef with the key "token"`)), typ)
	}
}

// TestCommentTextCannotActOnTheChangeRequest: an event's text (a commit
// message, a name from Git) cannot mention a user, forge a marker, add
// HTML or a heading to the comment.
func TestCommentTextCannotActOnTheChangeRequest(t *testing.T) {
	g := NewWithT(t)
	e := prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, "ping @org/admins <!-- plumb-comment-key:x --> # done [x](https://evil.example)")
	body := commentBody(webMarker, e)
	g.Expect(strings.Count(body, "<!--")).To(Equal(1), "the marker only")
	g.Expect(body).NotTo(ContainSubstring("@org"))
	g.Expect(body).To(ContainSubstring(`ping @` + "\u2060" + `org/admins &lt;!-- plumb-comment-key:x --\> \# done \[x\](https://evil.example)`))
}
