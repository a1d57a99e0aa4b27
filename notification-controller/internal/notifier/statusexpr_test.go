package notifier

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// TestCommitStatusExprNamesTheStatus: Flux's documented expression, over
// the event (with the Alert's eventMetadata), the Provider and the Alert,
// names the status each host's stand-in receives; an expression that does
// not give a string, or a type that posts no commit status, is refused by
// New; one that fails on an event fails its delivery for good.
func TestCommitStatusExprNamesTheStatus(t *testing.T) {
	const expr = "(event.involvedObject.kind + '/' + event.involvedObject.name + '/' + event.metadata.foo + '/' + " +
		"alert.metadata.name + '/' + provider.metadata.uid.split('-').first().value()).lowerAscii()"
	provider := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "github", Namespace: "apps", UID: "0C9E5F1D-2b7a-4c61"}}
	alert := &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Name: "On-Sync", Namespace: "apps"}}
	ctx := WithAlert(context.Background(), alert)
	e := syncEvent(events.SeverityInfo, kustomizev1.AppliedReason, "revision main: 2 created", "main@sha1:"+testSHA)
	e.Metadata = map[string]string{"foo": "Bar"}
	for _, typ := range []string{notificationv1.GitHubProvider, notificationv1.GitLabProvider, notificationv1.GiteaProvider, notificationv1.BitbucketServerProvider} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			host, srv := newHostStandIn(t, typ)
			cfg := configFor(contractOf(typ), srv)
			cfg.CommitStatusExpr, cfg.Provider = expr, provider
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Post(ctx, e)).To(Succeed())
			g.Expect(host.received()).To(ConsistOf(HaveField("Context", "kustomization/web/bar/on-sync/0c9e5f1d")))

			noFoo := e
			noFoo.Metadata = nil
			err = n.Post(ctx, noFoo)
			g.Expect(err).To(MatchError(ContainSubstring("spec.commitStatusExpr: no such key: metadata")))
			g.Expect(IsPermanent(err)).To(BeTrue())
			g.Expect(host.received()).To(HaveLen(1))
		})
	}

	g := NewWithT(t)
	cfg := Config{Type: notificationv1.GitHubProvider, Address: "https://github.com/org/repo", Token: testToken,
		CommitStatusExpr: "event.involvedObject.name == 'web'"}
	_, err := New(cfg)
	g.Expect(err).To(MatchError(ContainSubstring(`spec.commitStatusExpr: "event.involvedObject.name == 'web'" gives a bool, not a string`)))
	cfg.CommitStatusExpr = "''"
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(ctx, e)
	g.Expect(err).To(MatchError("spec.commitStatusExpr gave an empty string, which names no commit status"))
	_, err = New(Config{Type: notificationv1.GitHubDispatchProvider, Address: "https://github.com/org/repo", Token: testToken, CommitStatusExpr: "'x'"})
	g.Expect(err).To(MatchError("spec.commitStatusExpr names a commit status, which a githubdispatch provider does not post"))
}
