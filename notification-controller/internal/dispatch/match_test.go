package dispatch

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

func event(kind, ns, name string, sev events.Severity, msg string) *events.Event {
	return &events.Event{
		SchemaVersion:  events.SchemaVersion,
		ID:             events.NewID(),
		InvolvedObject: events.ObjectReference{Kind: kind, Namespace: ns, Name: name},
		Severity:       sev,
		Reason:         "R",
		Message:        msg,
		Timestamp:      time.Now(),
	}
}

func TestMatch(t *testing.T) {
	src := func(kind, name, ns string, labels map[string]string) notificationv1.CrossNamespaceObjectReference {
		return notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name, Namespace: ns, MatchLabels: labels}
	}
	alert := func(mutate func(*notificationv1.AlertSpec)) *notificationv1.Alert {
		a := &notificationv1.Alert{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "a"},
			Spec: notificationv1.AlertSpec{
				EventSeverity: "info",
				EventSources:  []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "*", "", nil)},
			},
		}
		if mutate != nil {
			mutate(&a.Spec)
		}
		return a
	}
	webLabels := func() (map[string]string, error) { return map[string]string{"team": "web", "tier": "front"}, nil }
	for _, tc := range []struct {
		name   string
		alert  *notificationv1.Alert
		event  *events.Event
		labels func() (map[string]string, error)
		want   bool
		err    bool
	}{
		{"wildcard in own namespace", alert(nil), event("GitRepository", "apps", "x", events.SeverityInfo, "m"), nil, true, false},
		{"kind ignores case", alert(nil), event("gitrepository", "apps", "x", events.SeverityInfo, "m"), nil, true, false},
		{"other kind", alert(nil), event("Kustomization", "apps", "x", events.SeverityInfo, "m"), nil, false, false},
		{"other namespace", alert(nil), event("GitRepository", "other", "x", events.SeverityInfo, "m"), nil, false, false},
		{"explicit namespace", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "x", "other", nil)}
		}), event("GitRepository", "other", "x", events.SeverityInfo, "m"), nil, true, false},
		{"name prefix", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "web-*", "", nil)}
		}), event("GitRepository", "apps", "web-eu", events.SeverityInfo, "m"), nil, true, false},
		{"name prefix miss", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "web-*", "", nil)}
		}), event("GitRepository", "apps", "api-eu", events.SeverityInfo, "m"), nil, false, false},
		{"second source matches", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = append(s.EventSources, src("Kustomization", "web", "", nil))
		}), event("Kustomization", "apps", "web", events.SeverityInfo, "m"), nil, true, false},
		{"error alert drops info", alert(func(s *notificationv1.AlertSpec) { s.EventSeverity = "error" }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "m"), nil, false, false},
		{"error alert sends error", alert(func(s *notificationv1.AlertSpec) { s.EventSeverity = "error" }),
			event("GitRepository", "apps", "x", events.SeverityError, "m"), nil, true, false},
		{"info alert sends error", alert(nil), event("GitRepository", "apps", "x", events.SeverityError, "m"), nil, true, false},
		{"labels match", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "*", "", map[string]string{"team": "web"})}
		}), event("GitRepository", "apps", "x", events.SeverityInfo, "m"), webLabels, true, false},
		{"labels differ", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "*", "", map[string]string{"team": "api"})}
		}), event("GitRepository", "apps", "x", events.SeverityInfo, "m"), webLabels, false, false},
		{"labels unreadable", alert(func(s *notificationv1.AlertSpec) {
			s.EventSources = []notificationv1.CrossNamespaceObjectReference{src("GitRepository", "*", "", map[string]string{"team": "api"})}
		}), event("GitRepository", "apps", "x", events.SeverityInfo, "m"), func() (map[string]string, error) { return nil, errors.New("boom") }, false, true},
		{"included", alert(func(s *notificationv1.AlertSpec) { s.InclusionList = []string{"^fetch"} }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "fetch failed"), nil, true, false},
		{"not included", alert(func(s *notificationv1.AlertSpec) { s.InclusionList = []string{"^fetch"} }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "stored"), nil, false, false},
		{"excluded", alert(func(s *notificationv1.AlertSpec) { s.ExclusionList = []string{"no changes"} }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "no changes since main@sha1:1"), nil, false, false},
		{"exclusion wins over inclusion", alert(func(s *notificationv1.AlertSpec) {
			s.InclusionList = []string{"fetch"}
			s.ExclusionList = []string{"timeout"}
		}), event("GitRepository", "apps", "x", events.SeverityInfo, "fetch timeout"), nil, false, false},
		{"bad expression", alert(func(s *notificationv1.AlertSpec) { s.ExclusionList = []string{"("} }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "m"), nil, false, true},
		{"suspended", alert(func(s *notificationv1.AlertSpec) { s.Suspend = true }),
			event("GitRepository", "apps", "x", events.SeverityInfo, "m"), nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			labels := tc.labels
			if labels == nil {
				labels = func() (map[string]string, error) {
					t.Fatal("labels read for a source without matchLabels")
					return nil, nil
				}
			}
			got, err := Matcher{}.Match(tc.alert, tc.event, labels)
			if tc.err {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// Under --no-cross-namespace-refs a source naming another namespace, or
// every namespace, matches nothing, while the Alert's own namespace still
// matches through the other sources.
func TestNoCrossNamespaceSources(t *testing.T) {
	g := NewWithT(t)
	strict := Matcher{NoCrossNamespaceRefs: true}
	alert := &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"},
		Spec: notificationv1.AlertSpec{EventSources: []notificationv1.CrossNamespaceObjectReference{
			{Kind: "GitRepository", Name: "*", Namespace: "*"},
			{Kind: "GitRepository", Name: "*", Namespace: "b"},
			{Kind: "Kustomization", Name: "*", Namespace: "a"},
		}},
	}
	noLabels := func() (map[string]string, error) { return nil, nil }
	for _, tc := range []struct {
		e             *events.Event
		strict, loose bool
	}{
		{event("GitRepository", "b", "app", events.SeverityInfo, "m"), false, true},
		{event("GitRepository", "a", "app", events.SeverityInfo, "m"), false, true},
		{event("Kustomization", "a", "app", events.SeverityInfo, "m"), true, true},
		{event("Kustomization", "b", "app", events.SeverityInfo, "m"), false, false},
	} {
		got, err := strict.Match(alert, tc.e, noLabels)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(tc.strict), "strict: %s %s", tc.e.InvolvedObject.Kind, tc.e.InvolvedObject.Namespace)
		got, err = Matcher{}.Match(alert, tc.e, noLabels)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(tc.loose), "default: %s %s", tc.e.InvolvedObject.Kind, tc.e.InvolvedObject.Namespace)
	}
}

func TestRecentRemembersKeysForItsWindowAndAtMostMax(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1_000_000, 0)
	r := newRecent(time.Minute, 3, func() time.Time { return now })
	g.Expect(r.Seen("a")).To(BeFalse())
	r.Mark("a")
	g.Expect(r.Seen("a")).To(BeTrue())
	g.Expect(r.Seen("b")).To(BeFalse())
	now = now.Add(time.Minute)
	g.Expect(r.Seen("a")).To(BeFalse(), "the interval has passed")

	for _, k := range []string{"b", "c", "d"} {
		now = now.Add(time.Second)
		r.Mark(k)
	}
	g.Expect(r.at).NotTo(HaveKey("a"), "forgotten once its window passed")
	now = now.Add(time.Second)
	r.Mark("b") // b again: now the newest
	r.Mark("e")
	g.Expect(r.Seen("c")).To(BeFalse(), "beyond max, the oldest is forgotten")
	g.Expect([]bool{r.Seen("b"), r.Seen("d"), r.Seen("e")}).To(Equal([]bool{true, true, true}))
	g.Expect(len(r.order)).To(BeNumerically("<=", 6))

	off := newRecent(0, 3, nil)
	off.Mark("a")
	g.Expect(off.Seen("a")).To(BeFalse(), "interval 0 turns rate limiting off")
}

func TestWithAlert(t *testing.T) {
	g := NewWithT(t)
	e := event("GitRepository", "apps", "x", events.SeverityInfo, "m")
	e.Metadata = map[string]string{"cluster": "from-event"}
	a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{
		EventMetadata: map[string]string{"cluster": "from-alert", "env": "prod"},
		Summary:       "sum",
	}}
	out, err := withAlert(e, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Metadata).To(Equal(map[string]string{"cluster": "from-event", "env": "prod", "summary": "sum"}))
	g.Expect(e.Metadata).To(Equal(map[string]string{"cluster": "from-event"}), "the event itself is unchanged")
}

// The object's event.toolkit.fluxcd.io/ annotations are sent without the
// prefix, below the Alert's eventMetadata and summary, and the
// controller's own keys, as Flux orders them.
func TestWithAlertSendsTheObjectsAnnotationsBelowEverythingElse(t *testing.T) {
	g := NewWithT(t)
	e := event("Kustomization", "apps", "preview", events.SeverityInfo, "applied")
	e.Metadata = map[string]string{
		events.AnnotationPrefix + events.ChangeRequestKey: "42",
		events.AnnotationPrefix + "env":                   "from-annotation",
		events.AnnotationPrefix + "objects":               "from-annotation",
		events.AnnotationPrefix + "summary":               "from-annotation",
		"objects":                                         "3",
	}
	a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{EventMetadata: map[string]string{"env": "prod"}}}
	out, err := withAlert(e, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Metadata).To(Equal(map[string]string{"change_request": "42", "env": "prod", "objects": "3", "summary": "from-annotation"}))

	a.Spec.EventMetadata, a.Spec.Summary = nil, "from-alert"
	out, err = withAlert(e, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Metadata).To(Equal(map[string]string{"change_request": "42", "env": "from-annotation", "objects": "3", "summary": "from-alert"}))
}

func TestWithAlertRendersItsTemplatesOverTheEvent(t *testing.T) {
	g := NewWithT(t)
	e := event("Kustomization", "apps", "podinfo", events.SeverityError, "health check failed after 5m")
	e.Reason, e.Revision = "HealthCheckFailed", "main@sha1:0123456789abcdef0123456789abcdef01234567"
	a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{
		EventMetadata:   map[string]string{"cluster": "prod-eu"},
		Summary:         `{{ .InvolvedObject.Kind }}/{{ .InvolvedObject.Name }} on {{ .Metadata.cluster }}`,
		MessageTemplate: `{{ .Reason }} at {{ shortRevision .Revision }}: {{ .Message | upper }}`,
	}}
	out, err := withAlert(e, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Metadata).To(HaveKeyWithValue("summary", "Kustomization/podinfo on prod-eu"))
	g.Expect(out.Message).To(Equal("HealthCheckFailed at main@sha1:0123456: HEALTH CHECK FAILED AFTER 5M"))
	g.Expect(e.Message).To(Equal("health check failed after 5m"), "the event itself is unchanged")
}

func TestWithAlertSendsTheUntemplatedTextWhenATemplateFails(t *testing.T) {
	g := NewWithT(t)
	e := event("Kustomization", "apps", "podinfo", events.SeverityInfo, "applied")
	a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{
		Summary:         `{{ index .Metadata }}{{ printf "%s" (slice .Message 5 1) }}`,
		MessageTemplate: `{{ range .Metadata }}x{{ end }}{{ slice .Message 0 99 }}`,
	}}
	out, err := withAlert(e, a)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(ContainSubstring("spec.summary"), ContainSubstring("spec.messageTemplate")))
	g.Expect(out.Message).To(Equal("applied"))
	g.Expect(out.Metadata).To(HaveKeyWithValue("summary", a.Spec.Summary), "spec.summary as written")
}
