package notifier

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// dispatched is a repository dispatch event the stand-in took: its
// client_payload (with the event_type added) and the request's size.
type dispatched struct {
	payload map[string]json.RawMessage
	size    int
}

// githubDispatches is GitHub's "create a repository dispatch event": POST
// /repos/{owner}/{repo}/dispatches with a bearer token, event_type
// (required, at most 100 characters) and client_payload (an object of at
// most 10 top-level properties); 204 No Content.
func githubDispatches(w http.ResponseWriter, r *http.Request, b []byte) any {
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return nil
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v3/repos/org/repo/dispatches" {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return nil
	}
	var body struct {
		EventType     string                     `json:"event_type"`
		ClientPayload map[string]json.RawMessage `json:"client_payload"`
	}
	if strictJSON(b, &body) != nil || body.EventType == "" || len([]rune(body.EventType)) > 100 || len(body.ClientPayload) > 10 {
		http.Error(w, `{"message":"Validation Failed"}`, http.StatusUnprocessableEntity)
		return nil
	}
	body.ClientPayload["event_type"], _ = json.Marshal(body.EventType)
	w.WriteHeader(http.StatusNoContent)
	return dispatched{payload: body.ClientPayload, size: len(b)}
}

// TestGitHubDispatchSendsEveryEventAsARepositoryDispatch: events of any
// kind, with or without a revision, become repository_dispatch events of
// type <Kind>/<name>.<namespace> whose client_payload is the event; a
// large event is cut to a bounded payload.
func TestGitHubDispatchSendsEveryEventAsARepositoryDispatch(t *testing.T) {
	g := NewWithT(t)
	srv := newStandIn(t, githubDispatches)
	n, err := New(Config{Type: notificationv1.GitHubDispatchProvider, Address: srv.URL + "/org/repo", Token: testToken})
	g.Expect(err).NotTo(HaveOccurred())

	e := testEvent()
	source := syncEvent(events.SeverityInfo, sourcev1.NewArtifactReason, "stored artifact", "")
	source.InvolvedObject = events.ObjectReference{Kind: sourcev1.GitRepositoryKind, Namespace: "flux-system", Name: "app"}
	huge := syncEvent(events.SeverityError, kustomizev1.DriftDetectedReason, strings.Repeat("m", 100<<10), "main@sha1:"+testSHA)
	for range 2000 {
		huge.Changes = append(huge.Changes, events.Change{Object: "ConfigMap/apps/c", Path: "data.key", Before: `"a"`, After: `"b"`})
	}
	for _, ev := range []events.Event{e, source, huge} {
		g.Expect(n.Post(context.Background(), ev)).To(Succeed())
	}
	got := srv.got()
	g.Expect(got).To(HaveLen(3))
	first := got[0].(dispatched).payload
	g.Expect(string(first["event_type"])).To(Equal(`"Kustomization/web.apps"`))
	g.Expect(string(first["reason"])).To(Equal(`"DriftDetected"`))
	g.Expect(string(first["revision"])).To(Equal(`"main@sha1:4f3c2b1a"`))
	g.Expect(first).To(HaveKey("changes"))
	g.Expect(string(got[1].(dispatched).payload["event_type"])).To(Equal(`"GitRepository/app.flux-system"`))

	g.Expect(got[2].(dispatched).size).To(BeNumerically("<", maxDispatchPayload+200))
	g.Expect(got[2].(dispatched).payload).NotTo(HaveKey("changes"))
	var msg string
	g.Expect(json.Unmarshal(got[2].(dispatched).payload["message"], &msg)).To(Succeed())
	g.Expect(msg).To(HaveSuffix("…"))

	// Bad credentials are reported once, without the token.
	bad, _ := New(Config{Type: notificationv1.GitHubDispatchProvider, Address: srv.URL + "/org/repo", Token: "wrong"})
	err = bad.Post(context.Background(), e)
	g.Expect(IsPermanent(err)).To(BeTrue())
	g.Expect(err).To(MatchError("the githubdispatch API answered 401 Unauthorized (the token is not valid)"))
}
