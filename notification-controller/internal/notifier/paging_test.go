package notifier

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// pagingCase is one paging type with a configuration its stand-in
// accepts.
type pagingCase struct {
	typ   string
	serve func(t *testing.T) (*standIn, Config)
}

func host(s *standIn) string { return strings.TrimPrefix(s.URL, "http://") }

var pagingCases = []pagingCase{
	{notificationv1.AlertmanagerProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, alertmanagerService("Bearer "+testToken).handle)
		return s, Config{Type: notificationv1.AlertmanagerProvider, Address: s.URL + "/api/v2/alerts", Token: testToken}
	}},
	{notificationv1.PagerDutyProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, service((&pagerDutyService{}).serve).handle)
		return s, Config{Type: notificationv1.PagerDutyProvider, Address: s.URL, Channel: testRoutingKey}
	}},
	{notificationv1.OpsgenieProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, service(opsgenieService).handle)
		return s, Config{Type: notificationv1.OpsgenieProvider, Address: s.URL + "/v2/alerts", Token: testToken}
	}},
	{notificationv1.GrafanaProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, grafanaService("Bearer "+testToken).handle)
		return s, Config{Type: notificationv1.GrafanaProvider, Address: s.URL + "/api/annotations", Token: testToken}
	}},
	{notificationv1.DatadogProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, service(datadogService).handle)
		return s, Config{Type: notificationv1.DatadogProvider, Address: s.URL, Token: testToken}
	}},
	{notificationv1.SentryProvider, func(t *testing.T) (*standIn, Config) {
		s := newStandIn(t, sentryService("42").handle)
		return s, Config{Type: notificationv1.SentryProvider, Address: "http://" + testSentryKey + "@" + host(s) + "/42", Channel: "production"}
	}},
}

// deliver posts evs through c's notifier to its stand-in, which must
// accept each, and returns what it accepted.
func deliver(t *testing.T, c pagingCase, evs ...events.Event) []any {
	t.Helper()
	s, cfg := c.serve(t)
	for _, e := range evs {
		NewWithT(t).Expect(post(t, cfg, e)).To(Succeed())
	}
	got := s.got()
	NewWithT(t).Expect(got).To(HaveLen(len(evs)))
	return got
}

func post(t *testing.T, cfg Config, e events.Event) error {
	t.Helper()
	n, err := New(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return n.Post(context.Background(), e)
}

func recoveredEvent() events.Event {
	e := testEvent()
	e.Severity, e.Reason, e.Message, e.Changes = events.SeverityInfo, kustomizev1.HealthRecoveredReason, "all objects are healthy", nil
	return e
}

func progressEvent() events.Event {
	e := testEvent()
	e.Severity, e.Reason, e.Message, e.Changes = events.SeverityInfo, meta.ProgressingReason, "reconciling", nil
	return e
}

// TestPagingRequestShapes: what each service receives for an error event,
// accepted by a stand-in that checks it as the service would.
func TestPagingRequestShapes(t *testing.T) {
	t.Run("alertmanager", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[0], testEvent())
		alerts := got[0].([]amAlert)
		g.Expect(alerts).To(HaveLen(1))
		g.Expect(alerts[0].Labels).To(Equal(map[string]string{
			"alertname": "PlumbKustomizationDriftDetected", "severity": "error", "reason": "DriftDetected",
			"kind": "Kustomization", "name": "web", "namespace": "apps", "reportingcontroller": "sync-controller",
			"cluster": "eu-1",
		}))
		g.Expect(alerts[0].Annotations).To(Equal(map[string]string{
			"message": "1 object drifted from Git", "summary": "prod", "revision": "main@sha1:4f3c2b1a",
			"drift": "Deployment/apps/web spec.replicas (by kubectl-edit)",
		}))
		g.Expect(alerts[0].StartsAt).To(Equal("2026-05-01T10:00:00Z"))
	})

	t.Run("alertmanager, basic credentials in the address", func(t *testing.T) {
		g := NewWithT(t)
		s := newStandIn(t, alertmanagerService(basicHeader("am", "pa ss")).handle)
		g.Expect(post(t, Config{Type: notificationv1.AlertmanagerProvider, Address: "http://am:pa%20ss@" + host(s) + "/api/v2/alerts"}, testEvent())).To(Succeed())
		g.Expect(s.got()).To(HaveLen(1))
	})

	t.Run("alertmanager, metadata keys made label names", func(t *testing.T) {
		g := NewWithT(t)
		e := testEvent()
		e.Metadata = map[string]string{"team.name": "web", "9lives": "x", events.VolatilePrefix + "replicas": "2/3", "severity": "not this"}
		a := deliver(t, pagingCases[0], e)[0].([]amAlert)[0]
		g.Expect(a.Labels).To(HaveKeyWithValue("team_name", "web"))
		g.Expect(a.Labels).To(HaveKeyWithValue("_lives", "x"))
		g.Expect(a.Labels).To(HaveKeyWithValue("severity", "error"), "the metadata cannot override the event's labels")
		g.Expect(a.Annotations).To(HaveKeyWithValue("volatile_replicas", "2/3"), "volatile metadata is no label: it would split one alert")
	})

	t.Run("pagerduty", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[1], testEvent())
		ev := got[0].(pdEvent)
		g.Expect(ev.EventAction).To(Equal("trigger"))
		g.Expect(ev.RoutingKey).To(Equal(testRoutingKey))
		g.Expect(ev.DedupKey).To(Equal("plumb:kustomization:apps:web"))
		g.Expect(*ev.Payload).To(Equal(pdPayload{
			Summary:   "kustomization/apps/web: DriftDetected: 1 object drifted from Git",
			Source:    "sync-controller",
			Severity:  "error",
			Timestamp: "2026-05-01T10:00:00Z",
			Component: "web",
			Group:     "Kustomization",
			Class:     "DriftDetected",
			CustomDetails: map[string]any{
				"message": "1 object drifted from Git", "Revision": "main@sha1:4f3c2b1a", "Summary": "prod",
				"Drift": "Deployment/apps/web spec.replicas (by kubectl-edit)", "cluster": "eu-1",
			},
		}))
	})

	t.Run("opsgenie", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[2], testEvent())
		a := got[0].(ogAlert)
		g.Expect(a.Message).To(Equal("kustomization/apps/web: DriftDetected"))
		g.Expect(a.Alias).To(Equal("plumb:kustomization:apps:web"))
		g.Expect(a.Description).To(Equal("1 object drifted from Git"))
		g.Expect(a.Entity).To(Equal("kustomization/apps/web"))
		g.Expect(a.Source).To(Equal("sync-controller"))
		g.Expect(a.Tags).To(Equal([]string{"plumb", "kustomization", "error", "DriftDetected"}))
		g.Expect(a.Details).To(Equal(map[string]string{
			"severity": "error", "Revision": "main@sha1:4f3c2b1a", "Summary": "prod",
			"Drift": "Deployment/apps/web spec.replicas (by kubectl-edit)", "cluster": "eu-1",
		}))
	})

	t.Run("grafana", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[3], testEvent())
		a := got[0].(gfAnnotation)
		g.Expect(a.Time).To(Equal(testEvent().Timestamp.UnixMilli()))
		g.Expect(a.Tags).To(Equal([]string{"plumb", "sync-controller", "kind: Kustomization", "name: web", "namespace: apps",
			"severity: error", "reason: DriftDetected", "cluster: eu-1"}))
		g.Expect(a.Text).To(Equal("kustomization/apps/web: DriftDetected\n1 object drifted from Git\nRevision: main@sha1:4f3c2b1a\n" +
			"Summary: prod\nDrift: Deployment/apps/web spec.replicas (by kubectl-edit)\ncluster: eu-1"))
	})

	t.Run("grafana, basic auth from the Secret", func(t *testing.T) {
		g := NewWithT(t)
		s := newStandIn(t, grafanaService(basicHeader("admin", "pw")).handle)
		g.Expect(post(t, Config{Type: notificationv1.GrafanaProvider, Address: s.URL + "/api/annotations", User: "admin", Password: "pw"}, testEvent())).To(Succeed())
		g.Expect(s.got()).To(HaveLen(1))
	})

	t.Run("datadog", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[4], testEvent())
		ev := got[0].(ddEvent)
		g.Expect(ev.Title).To(Equal("kustomization/apps/web: DriftDetected"))
		g.Expect(ev.Text).To(HavePrefix("1 object drifted from Git\nRevision: main@sha1:4f3c2b1a\n"))
		g.Expect(ev.AlertType).To(Equal("error"))
		g.Expect(ev.AggregationKey).To(Equal("plumb:kustomization:apps:web"))
		g.Expect(ev.Tags).To(Equal([]string{"kube_kind:kustomization", "kube_name:web", "kube_namespace:apps",
			"plumb_reason:driftdetected", "plumb_reporting_controller:sync-controller", "cluster:eu-1"}))
	})

	t.Run("datadog dates an event when it happened, within the 18 hours it accepts", func(t *testing.T) {
		g := NewWithT(t)
		e := testEvent()
		g.Expect(datadogEventOf(e, e.Timestamp.Add(time.Hour)).DateHappened).To(Equal(e.Timestamp.Unix()))
		g.Expect(datadogEventOf(e, e.Timestamp.Add(19*time.Hour)).DateHappened).To(BeZero())
	})

	t.Run("datadog, a success", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[4], recoveredEvent(), progressEvent())
		g.Expect(got[0].(ddEvent).AlertType).To(Equal("success"))
		g.Expect(got[1].(ddEvent).AlertType).To(Equal("info"))
	})

	t.Run("sentry error", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[5], testEvent())
		item := got[0].(sentryItem)
		g.Expect(item.Type).To(Equal("event"))
		g.Expect(item.Payload).To(HaveKeyWithValue("level", "error"))
		g.Expect(item.Payload).To(HaveKeyWithValue("environment", "production"))
		g.Expect(item.Payload).To(HaveKeyWithValue("server_name", "sync-controller"))
		g.Expect(item.Payload).To(HaveKeyWithValue("message", map[string]any{"formatted": "1 object drifted from Git"}))
		g.Expect(item.Payload).To(HaveKeyWithValue("fingerprint", []any{"plumb", "kustomization/apps/web", "DriftDetected"}))
		g.Expect(item.Payload["tags"]).To(Equal(map[string]any{
			"kind": "Kustomization", "namespace": "apps", "name": "web", "reason": "DriftDetected",
			"reporting_controller": "sync-controller", "cluster": "eu-1",
		}))
		g.Expect(item.Payload["extra"]).To(HaveKeyWithValue("Revision", "main@sha1:4f3c2b1a"))
	})

	t.Run("sentry info is a transaction", func(t *testing.T) {
		g := NewWithT(t)
		got := deliver(t, pagingCases[5], recoveredEvent())
		item := got[0].(sentryItem)
		g.Expect(item.Type).To(Equal("transaction"))
		g.Expect(item.Payload).To(HaveKeyWithValue("transaction", "kustomization/apps/web: HealthRecovered"))
		g.Expect(item.Payload).NotTo(HaveKey("level"))
	})

	t.Run("sentry event ids are the event's, so a retried delivery is one event", func(t *testing.T) {
		g := NewWithT(t)
		other := testEvent()
		other.ID = "another"
		ids := []any{}
		for _, it := range deliver(t, pagingCases[5], testEvent(), testEvent(), other) {
			ids = append(ids, it.(sentryItem).Payload["event_id"])
		}
		g.Expect(ids[0]).To(Equal(ids[1]))
		g.Expect(ids[2]).NotTo(Equal(ids[0]))
	})
}

// TestPagerDutyOpensAndResolvesOneIncident: an object's failures go to one
// incident, progress is not sent, and its next success resolves that
// incident and no other.
func TestPagerDutyOpensAndResolvesOneIncident(t *testing.T) {
	g := NewWithT(t)
	pd := &pagerDutyService{}
	s := newStandIn(t, service(pd.serve).handle)
	cfg := Config{Type: notificationv1.PagerDutyProvider, Address: s.URL, Channel: testRoutingKey}

	g.Expect(post(t, cfg, testEvent())).To(Succeed())
	again := testEvent()
	again.Reason, again.Message = kustomizev1.HealthCheckFailedReason, "Deployment/apps/web is Degraded"
	g.Expect(post(t, cfg, again)).To(Succeed())
	other := testEvent()
	other.InvolvedObject.Name = "api"
	g.Expect(post(t, cfg, other)).To(Succeed())
	g.Expect(pd.open()).To(Equal(map[string]bool{"plumb:kustomization:apps:web": true, "plumb:kustomization:apps:api": true}))

	g.Expect(post(t, cfg, progressEvent())).To(Succeed())
	g.Expect(s.count()).To(Equal(3), "a progress event is not sent")

	g.Expect(post(t, cfg, recoveredEvent())).To(Succeed())
	g.Expect(pd.open()).To(Equal(map[string]bool{"plumb:kustomization:apps:web": false, "plumb:kustomization:apps:api": true}))
	resolve := s.got()[3].(pdEvent)
	g.Expect(resolve).To(Equal(pdEvent{RoutingKey: testRoutingKey, EventAction: "resolve", DedupKey: "plumb:kustomization:apps:web"}))
}

// TestOpsgenieClosesTheAlertItOpened: the alias of an object's alert is
// closed on its next success.
func TestOpsgenieClosesTheAlertItOpened(t *testing.T) {
	g := NewWithT(t)
	s := newStandIn(t, service(opsgenieService).handle)
	cfg := Config{Type: notificationv1.OpsgenieProvider, Address: s.URL + "/v2/alerts", Token: testToken}
	g.Expect(post(t, cfg, testEvent())).To(Succeed())
	g.Expect(post(t, cfg, progressEvent())).To(Succeed())
	g.Expect(post(t, cfg, recoveredEvent())).To(Succeed())
	got := s.got()
	g.Expect(s.count()).To(Equal(2), "a progress event is not sent")
	g.Expect(got[1]).To(Equal(ogClosed{Alias: got[0].(ogAlert).Alias, Body: ogClose{Source: "sync-controller", Note: "HealthRecovered: all objects are healthy"}}))
}

// TestPagingAnswers: how each type takes the answers its service gives: a
// refused request is reported once (PermanentError), a rate limit,
// timeout or server error is retried; the error shows the status code
// only, never the address, the credentials or the service's text.
func TestPagingAnswers(t *testing.T) {
	secrets := []string{testToken, testSentryKey, testRoutingKey, "SECRET-BODY", "127.0.0.1"}
	for _, c := range pagingCases {
		for _, tc := range []struct {
			code      int
			permanent bool
		}{
			{http.StatusBadRequest, true},
			{http.StatusUnauthorized, true},
			{http.StatusForbidden, true},
			{http.StatusNotFound, true},
			{http.StatusUnprocessableEntity, true},
			{http.StatusRequestTimeout, false},
			{http.StatusTooManyRequests, false},
			{http.StatusInternalServerError, false},
			{http.StatusServiceUnavailable, false},
		} {
			t.Run(fmt.Sprintf("%s %d", c.typ, tc.code), func(t *testing.T) {
				g := NewWithT(t)
				s, cfg := c.serve(t)
				s.answer(tc.code, nil)
				err := post(t, cfg, testEvent())
				g.Expect(err).To(MatchError(fmt.Sprintf("the %s endpoint answered %d %s", c.typ, tc.code, http.StatusText(tc.code))))
				g.Expect(IsPermanent(err)).To(Equal(tc.permanent))
				g.Expect(s.count()).To(Equal(1), "sent once: retrying is the dispatcher's")
			})
		}

		t.Run(c.typ+" refuses wrong credentials", func(t *testing.T) {
			g := NewWithT(t)
			s, cfg := c.serve(t)
			switch c.typ {
			case notificationv1.PagerDutyProvider:
				cfg.Channel = strings.Repeat("x", 32)
			case notificationv1.SentryProvider:
				cfg.Address = "http://" + strings.Repeat("f", 32) + "@" + host(s) + "/42"
			default:
				cfg.Token = "wrong"
			}
			err := post(t, cfg, testEvent())
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsPermanent(err)).To(BeTrue(), err.Error())
			g.Expect(s.got()).To(BeEmpty())
		})

		t.Run(c.typ+" unreachable", func(t *testing.T) {
			g := NewWithT(t)
			s, cfg := c.serve(t)
			s.Close()
			err := post(t, cfg, testEvent())
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsPermanent(err)).To(BeFalse())
			for _, secret := range secrets[:3] {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
		})
	}
	// The answers above: nothing of the service's text or the address.
	for _, c := range pagingCases {
		s, cfg := c.serve(t)
		s.answer(http.StatusBadRequest, nil)
		err := post(t, cfg, testEvent())
		for _, secret := range secrets {
			NewWithT(t).Expect(err.Error()).NotTo(ContainSubstring(secret), c.typ)
		}
	}
}

// TestPagingLimits: a long message, long names and much metadata stay
// within each service's limits (the stand-ins refuse what exceeds them).
func TestPagingLimits(t *testing.T) {
	e := testEvent()
	e.Message = strings.Repeat("é", 4096)
	e.InvolvedObject.Name = strings.Repeat("n", 253)
	e.InvolvedObject.Namespace = strings.Repeat("s", 63)
	e.Metadata = map[string]string{}
	for i := range 40 {
		e.Metadata[fmt.Sprintf("key%02d", i)] = strings.Repeat("v\n", 300)
	}
	succeeded := e
	succeeded.Severity, succeeded.Reason = events.SeverityInfo, meta.SucceededReason
	for _, c := range pagingCases {
		for _, ev := range []events.Event{e, succeeded} {
			t.Run(c.typ+" "+string(ev.Severity), func(t *testing.T) { deliver(t, c, ev) })
		}
	}
	key := incidentKey(e, 100)
	NewWithT(t).Expect(len(key)).To(BeNumerically("<=", 100))
	NewWithT(t).Expect(key).To(Equal(incidentKey(e, 100)), "still one key per object")
}

// TestPagingNewRejects: what a Provider of each type lacks shows on its
// Ready condition (New's error), quoting no secret.
func TestPagingNewRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg     Config
		message string
	}{
		"pagerduty without a routing key": {Config{Type: notificationv1.PagerDutyProvider, Address: "https://events.pagerduty.com"},
			"a pagerduty provider needs spec.channel: the routing key of a PagerDuty Events API v2 integration"},
		"pagerduty with a malformed routing key": {Config{Type: notificationv1.PagerDutyProvider, Address: "https://events.pagerduty.com", Channel: "#ops-SECRET"},
			"a pagerduty provider's spec.channel must be an Events API v2 routing key, 32 letters and digits"},
		"opsgenie without a key": {Config{Type: notificationv1.OpsgenieProvider, Address: "https://api.opsgenie.com/v2/alerts"},
			`a Provider of type opsgenie needs spec.secretRef with the key "token" (an Opsgenie API integration key)`},
		"datadog without a key": {Config{Type: notificationv1.DatadogProvider, Address: "https://api.datadoghq.com"},
			`a Provider of type datadog needs spec.secretRef with the key "token" (a Datadog API key)`},
		"sentry without a key": {Config{Type: notificationv1.SentryProvider, Address: "https://sentry.example.com/42"},
			"the sentry address must be the project's DSN, https://<public key>@<host>/<project id>"},
		"sentry without a project": {Config{Type: notificationv1.SentryProvider, Address: "https://SECRET@sentry.example.com/"},
			"the sentry address must be the project's DSN, https://<public key>@<host>/<project id>"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.cfg)
			NewWithT(t).Expect(err).To(MatchError(tc.message))
		})
	}
}

// TestSentryDSN: the envelope endpoint and key a DSN names, a path prefix
// (Sentry behind a reverse proxy) kept.
func TestSentryDSN(t *testing.T) {
	g := NewWithT(t)
	dsn, err := parseSentryDSN("https://pub:legacy@o1.ingest.sentry.io/prefix/4505")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dsn).To(Equal(sentryDSN{envelope: "https://o1.ingest.sentry.io/prefix/api/4505/envelope/", key: "pub", secret: "legacy"}))
}
