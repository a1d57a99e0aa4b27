package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/pkg/events"
)

// gitHubStatuses stands in for GitHub Enterprise's "create a commit
// status" (POST /api/v3/repos/{owner}/{repo}/statuses/{sha}, a bearer
// token, a strict body) and keeps the statuses it accepted; the commit's
// combined status, read first, is empty.
type gitHubStatuses struct {
	token string
	mu    sync.Mutex
	got   []gitHubStatus
	other int
}

type gitHubStatus struct {
	SHA         string `json:"-"`
	State       string `json:"state"`
	Description string `json:"description"`
	Context     string `json:"context"`
}

func (s *gitHubStatuses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v3/repos/org/app/commits/") && r.Header.Get("Authorization") == "Bearer "+s.token {
		// The combined status: none yet.
		_, _ = io.WriteString(w, `{"state":"pending","statuses":[],"total_count":0}`)
		return
	}
	const prefix = "/api/v3/repos/org/app/statuses/"
	sha, ok := strings.CutPrefix(r.URL.Path, prefix)
	if r.Method != http.MethodPost || !ok || len(sha) != 40 || r.Header.Get("Authorization") != "Bearer "+s.token {
		s.other++
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	st := gitHubStatus{SHA: sha}
	if d.Decode(&st) != nil || (st.State != "success" && st.State != "failure" && st.State != "pending" && st.State != "error") {
		s.other++
		http.Error(w, `{"message":"Validation Failed"}`, http.StatusUnprocessableEntity)
		return
	}
	s.got = append(s.got, st)
	w.WriteHeader(http.StatusCreated)
}

func (s *gitHubStatuses) statuses() []gitHubStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gitHubStatus(nil), s.got...)
}

// deliverStatuses creates the Alert "statuses" of every Kustomization's
// events, with eventMetadata, through provider, waits for both to be
// Ready and starts a dispatcher of their namespace.
func deliverStatuses(t *testing.T, provider *notificationv1.Provider, eventMetadata map[string]string) (opts config.Notification) {
	t.Helper()
	alert := createAlert(t, provider.Namespace, "statuses", provider.Name, func(s *notificationv1.AlertSpec) {
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{{Kind: kustomizev1.KustomizationKind, Name: "*"}}
		s.EventMetadata = eventMetadata
	})
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	opts = testOptions(provider.Namespace)
	startDispatcher(t, provider.Namespace, opts)
	return opts
}

// TestGitHubCommitStatus: an Alert on Kustomizations with a github
// Provider (address and token in its Secret) posts a Kustomization's sync
// outcome to the commit of the event's revision; an event without a
// commit is skipped, acknowledged, and no delivery failure. A github
// Provider whose address names no repository is not Ready.
func TestGitHubCommitStatus(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	host := &gitHubStatuses{token: "ghp-test-token"}
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)

	provider := createProvider(t, ns, "github", notificationv1.GitHubProvider, srv.URL+"/org/app.git", map[string]string{"token": host.token})
	opts := deliverStatuses(t, provider, nil)

	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	sha := strings.Repeat("5e", 20)
	controllers.Record(ks, events.SeverityInfo, kustomizev1.RenderedReason, "no commit here", events.WithRevision("latest@sha256:"+strings.Repeat("ab", 32)))
	controllers.Record(ks, events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/"+ns+"/web is Degraded", events.WithRevision("main@sha1:"+sha))
	waitConsumed(t, opts.ConsumerName)

	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(provider), provider)).To(Succeed())
	statusContext := "kustomization/" + ns + "/web/" + string(provider.UID)[:8]
	g.Expect(host.statuses()).To(Equal([]gitHubStatus{
		{SHA: sha, State: "failure", Description: "Deployment/" + ns + "/web is Degraded", Context: statusContext},
	}))
	g.Expect(host.other).To(BeZero())
	g.Consistently(func(g Gomega) []string { return warnings(g, ns, "statuses") }, time.Second, poll).Should(BeEmpty(),
		"the skipped event is no failed delivery")

	// A github address must name owner and repo: checked at reconcile.
	createSecret(t, ns, "token-only", map[string]string{"token": host.token})
	bad := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-repo"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.GitHubProvider, Address: "https://github.com/org", SecretRef: &meta.LocalObjectReference{Name: "token-only"}},
	}
	g.Expect(k8s.Create(context.Background(), bad)).To(Succeed())
	cond := waitReady(t, bad, metav1.ConditionFalse)
	g.Expect(cond.Message).To(ContainSubstring("address must be the repository's URL, https://github.com/<owner>/<repo>"))
}

// TestGitHubCommitStatusExpr: a github Provider's commitStatusExpr names
// the status from the event (with the Alert's eventMetadata), the Alert
// and the Provider, as the dispatcher delivers it; one that cannot give a
// string keeps the Provider from being Ready, and the API server refuses
// the field on a type that posts no commit status.
func TestGitHubCommitStatusExpr(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	host := &gitHubStatuses{token: "ghp-test-token"}
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)

	createSecret(t, ns, "github-token", map[string]string{"token": host.token})
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		Spec: notificationv1.ProviderSpec{
			Type: notificationv1.GitHubProvider, Address: srv.URL + "/org/app", Insecure: true,
			SecretRef:        &meta.LocalObjectReference{Name: "github-token"},
			CommitStatusExpr: "event.metadata.cluster + '/' + alert.metadata.name + '/' + event.involvedObject.name + '/' + provider.metadata.uid.split('-').first().value()",
		},
	}
	g.Expect(k8s.Create(ctx, provider)).To(Succeed())
	deliverStatuses(t, provider, map[string]string{"cluster": "prod-eu"})

	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	sha := strings.Repeat("5e", 20)
	controllers.Record(ks, events.SeverityInfo, kustomizev1.AppliedReason, "applied", events.WithRevision("main@sha1:"+sha))
	g.Eventually(host.statuses, timeout, poll).Should(HaveLen(1))
	g.Expect(host.statuses()[0].Context).To(Equal("prod-eu/statuses/web/" + strings.Split(string(provider.UID), "-")[0]))

	provider.Spec.CommitStatusExpr = "event.involvedObject.name == 'web'"
	g.Expect(k8s.Update(ctx, provider)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(provider), provider)).To(Succeed())
		g.Expect(readyOf(provider).Reason).To(Equal(meta.InvalidSpecReason))
		g.Expect(readyOf(provider).Message).To(ContainSubstring("gives a bool, not a string"))
	}, timeout, poll).Should(Succeed())

	slack := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.SlackProvider, Address: "https://hooks.slack.example/x", CommitStatusExpr: "'x'"},
	}
	err := k8s.Create(ctx, slack)
	g.Expect(err).To(MatchError(ContainSubstring("spec.commitStatusExpr is only supported for the 'github', 'gitlab', 'gitea', 'bitbucketserver', 'bitbucket', 'azuredevops' provider types")))
}
