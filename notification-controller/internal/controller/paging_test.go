package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// pagerDutyAction is one Events API v2 request the stand-in accepted.
type pagerDutyAction struct {
	Action, DedupKey, Summary string
}

// pagerDutyStandIn accepts Events API v2 events for one routing key, as
// PagerDuty does: a trigger needs a payload with summary, source and
// severity; other requests are answered 400.
func pagerDutyStandIn(t *testing.T, routingKey string) (*httptest.Server, func() []pagerDutyAction) {
	var mu sync.Mutex
	var got []pagerDutyAction
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The payload's fields are the notifier package's to check in
		// full; here what makes PagerDuty accept a trigger.
		var ev struct {
			RoutingKey  string         `json:"routing_key"`
			EventAction string         `json:"event_action"`
			DedupKey    string         `json:"dedup_key"`
			Client      string         `json:"client"`
			Payload     map[string]any `json:"payload"`
		}
		d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 512<<10))
		d.DisallowUnknownFields()
		ok := r.Method == http.MethodPost && r.URL.Path == "/v2/enqueue" && d.Decode(&ev) == nil &&
			ev.RoutingKey == routingKey && ev.DedupKey != ""
		summary, _ := ev.Payload["summary"].(string)
		switch {
		case ok && ev.EventAction == "trigger":
			source, _ := ev.Payload["source"].(string)
			ok = summary != "" && source != "" && ev.Payload["severity"] == "error"
		case ok:
			ok = ev.EventAction == "resolve" && ev.Payload == nil
		}
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"invalid event","message":"Event object is invalid"}`))
			return
		}
		a := pagerDutyAction{Action: ev.EventAction, DedupKey: ev.DedupKey, Summary: summary}
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"success","message":"Event processed","dedup_key":"` + ev.DedupKey + `"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []pagerDutyAction {
		mu.Lock()
		defer mu.Unlock()
		return append([]pagerDutyAction(nil), got...)
	}
}

// TestPagerDutyIncident: through the whole controller, a source's failure
// opens a PagerDuty incident and its next artifact resolves that same
// incident; the progress event between them is not sent.
func TestPagerDutyIncident(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const routingKey = "R0UT1NGkey0123456789abcdefABCDEF"

	// A channel that is no routing key (a Slack channel's name, say)
	// leaves the Provider not ready, saying why. (Without one, the API
	// server refuses it.)
	bad := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pagerduty-no-key"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.PagerDutyProvider, Channel: "#incidents"},
	}
	g.Expect(k8s.Create(ctx, bad)).To(Succeed())
	cond := waitReady(t, bad, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InvalidSpecReason))
	g.Expect(cond.Message).To(ContainSubstring("spec.channel must be an Events API v2 routing key"))

	pd, got := pagerDutyStandIn(t, routingKey)
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pagerduty"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.PagerDutyProvider, Address: pd.URL, Channel: routingKey},
	}
	g.Expect(k8s.Create(ctx, provider)).To(Succeed())
	alert := createAlert(t, ns, "incidents", "pagerduty", nil)
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	startDispatcher(t, ns, testOptions(ns))

	repo := gitRepository(t, ns, "podinfo", nil, false)
	controllers.Record(repo, events.SeverityError, sourcev1.AuthenticationFailedReason, "authentication required")
	g.Eventually(func() []pagerDutyAction { return got() }, timeout, poll).Should(HaveLen(1))
	controllers.Record(repo, events.SeverityInfo, meta.ProgressingReason, "fetching")
	controllers.Record(repo, events.SeverityInfo, sourcev1.NewArtifactReason, "stored artifact for revision main@sha1:4f3c2b1a",
		events.WithRevision("main@sha1:4f3c2b1a"))
	g.Eventually(func() []pagerDutyAction { return got() }, timeout, poll).Should(HaveLen(2))

	key := "plumb:gitrepository:" + ns + ":podinfo"
	g.Expect(got()).To(Equal([]pagerDutyAction{
		{Action: "trigger", DedupKey: key, Summary: "gitrepository/" + ns + "/podinfo: AuthenticationFailed: authentication required"},
		{Action: "resolve", DedupKey: key},
	}), "events are delivered in order: a progress event sent would stand between the two")
}

// TestPagingTokenInTheSecret: a type that needs a token waits for the
// Secret to have it (SecretNotReady, retried), and is ready once it does.
func TestPagingTokenInTheSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	secret := createSecret(t, ns, "datadog", map[string]string{"address": "https://api.datadoghq.eu"})
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "datadog"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.DatadogProvider, SecretRef: &meta.LocalObjectReference{Name: "datadog"}},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	cond := waitReady(t, p, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(Equal(`secret ` + ns + `/datadog has no key "token" (a Datadog API key)`))

	secret.StringData = map[string]string{"token": "dd-api-key-not-shown"}
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	cond = waitReady(t, p, metav1.ConditionTrue)
	g.Expect(cond.Message).To(Equal("datadog provider is ready"))
}
