package controller

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// gitHubComments stands in for GitHub Enterprise's issue comments of
// org/app (a bearer token; GET /api/v3/user; GET and POST
// .../issues/{n}/comments; PATCH .../issues/comments/{id}, the token's
// own only; bodies {"body": "..."} decoded strictly) and keeps them.
type gitHubComments struct {
	token string
	mu    sync.Mutex
	// bodies are the comments by number of the pull request, by id.
	bodies map[string]map[int]string
	nextID int
	other  int
}

func (s *gitHubComments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	const repo = "/api/v3/repos/org/app/issues/"
	answer := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		s.other++
		answer(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	body := func() (string, bool) {
		b, _ := io.ReadAll(r.Body)
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		var c struct {
			Body string `json:"body"`
		}
		if r.Header.Get("Content-Type") != "application/json" || d.Decode(&c) != nil || c.Body == "" {
			s.other++
			answer(http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
			return "", false
		}
		return c.Body, true
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == "/api/v3/user":
		answer(http.StatusOK, map[string]any{"login": "plumb-bot"})
	case strings.HasPrefix(path, repo+"comments/") && r.Method == http.MethodPatch:
		id, _ := strconv.Atoi(strings.TrimPrefix(path, repo+"comments/"))
		for _, comments := range s.bodies {
			if _, ok := comments[id]; ok {
				if text, ok := body(); ok {
					comments[id] = text
					answer(http.StatusOK, map[string]any{"id": id, "body": text})
				}
				return
			}
		}
		s.other++
		answer(http.StatusNotFound, map[string]string{"message": "Not Found"})
	case strings.HasPrefix(path, repo) && strings.HasSuffix(path, "/comments"):
		number := strings.TrimSuffix(strings.TrimPrefix(path, repo), "/comments")
		switch r.Method {
		case http.MethodGet:
			list := []any{}
			for id, text := range s.bodies[number] {
				list = append(list, map[string]any{"id": id, "body": text, "user": map[string]any{"login": "plumb-bot"}})
			}
			answer(http.StatusOK, list)
		case http.MethodPost:
			if text, ok := body(); ok {
				s.nextID++
				if s.bodies[number] == nil {
					s.bodies[number] = map[int]string{}
				}
				s.bodies[number][s.nextID] = text
				answer(http.StatusCreated, map[string]any{"id": s.nextID, "body": text})
			}
		}
	default:
		s.other++
		answer(http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

func (s *gitHubComments) on(number string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, text := range s.bodies[number] {
		out = append(out, text)
	}
	return out
}

// counts are how many pull requests have comments, and how many requests
// the stand-in refused.
func (s *gitHubComments) counts() (numbers, other int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies), s.other
}

// TestProviderCommentsOnTheChangeRequestTheObjectNames: a Kustomization
// annotated event.toolkit.fluxcd.io/change_request: "7" has its events
// carry the number (through the controllers' Recorder, the stream and the
// dispatcher), and a githubpullrequestcomment Provider keeps one comment
// about it on pull request 7, edited by the next event; events about a
// Kustomization without the annotation are skipped, with no failed
// delivery.
func TestProviderCommentsOnTheChangeRequestTheObjectNames(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	host := &gitHubComments{token: "ghp-test-token", bodies: map[string]map[int]string{}}
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)

	provider := createProvider(t, ns, "pr", notificationv1.GitHubPullRequestCommentProvider, srv.URL+"/org/app", map[string]string{"token": host.token})
	opts := deliverStatuses(t, provider, map[string]string{"cluster": "preview-eu"})

	preview := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview",
		Annotations: map[string]string{events.AnnotationPrefix + events.ChangeRequestKey: "7"}}}
	plain := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
	controllers.Record(plain, events.SeverityInfo, kustomizev1.AppliedReason, "applied without a pull request")
	controllers.Record(preview, events.SeverityInfo, kustomizev1.AppliedReason, "revision pr-7: 2 created", events.WithRevision("pr-7@sha1:"+strings.Repeat("5e", 20)))
	g.Eventually(func() []string { return host.on("7") }, timeout, poll).Should(ConsistOf(
		And(ContainSubstring("/Kustomization/"+ns+"/preview -->"), ContainSubstring("revision pr-7: 2 created"), ContainSubstring("**cluster:** preview-eu"))))

	controllers.Record(preview, events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/"+ns+"/web is Degraded")
	g.Eventually(func() []string { return host.on("7") }, timeout, poll).Should(ConsistOf(
		And(ContainSubstring("⚠️ Kustomization/"+ns+"/preview"), ContainSubstring("is Degraded"), Not(ContainSubstring("change\\_request")))))
	waitConsumed(t, opts.ConsumerName)
	g.Expect(host.on("7")).To(HaveLen(1), "one comment, edited")
	numbers, other := host.counts()
	g.Expect(numbers).To(Equal(1), "no comment for the Kustomization without the annotation")
	g.Expect(other).To(BeZero(), "no request the host refused")
	g.Consistently(func(g Gomega) []string { return warnings(g, ns, "statuses") }, time.Second, poll).Should(BeEmpty(),
		"the skipped event is no failed delivery")
}
