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
	alert := createAlert(t, ns, "statuses", "github", func(s *notificationv1.AlertSpec) {
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{{Kind: kustomizev1.KustomizationKind, Name: "*"}}
	})
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

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
