package alerttext

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

func alert(summary, message string) *notificationv1.Alert {
	return &notificationv1.Alert{Spec: notificationv1.AlertSpec{Summary: summary, MessageTemplate: message}}
}

func degraded() *events.Event {
	return &events.Event{
		InvolvedObject: events.ObjectReference{APIVersion: "kustomize.plumb.dev/v1", Kind: "Kustomization", Namespace: "apps", Name: "podinfo"},
		Severity:       events.SeverityError,
		Reason:         "HealthCheckFailed",
		Message:        "Deployment/apps/podinfo: 1 of 3 replicas available",
		Revision:       "main@sha1:0123456789abcdef0123456789abcdef01234567",
		Metadata:       map[string]string{"cluster": "prod-eu", "env": "prod"},
		Timestamp:      time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC),
	}
}

func render(t *testing.T, summary, message string) (Rendered, error) {
	t.Helper()
	tmpl, err := Parse(alert(summary, message))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tmpl.Render(degraded())
}

func TestTemplatesSeeTheEvent(t *testing.T) {
	for _, tc := range []struct{ name, tmpl, want string }{
		{"a literal summary is itself", "production cluster", "production cluster"},
		{"object", "{{ .InvolvedObject.Kind }} {{ .InvolvedObject.Namespace }}/{{ .InvolvedObject.Name }}", "Kustomization apps/podinfo"},
		{"severity and reason", "[{{ .Severity | upper }}] {{ .Reason }}", "[ERROR] HealthCheckFailed"},
		{"metadata", `{{ .Metadata.cluster }} {{ index .Metadata "env" }}`, "prod-eu prod"},
		{"missing metadata is empty", `{{ .Metadata.region | default "unknown" }}`, "unknown"},
		{"range over metadata", `{{ range $k, $v := .Metadata }}{{ $k }}={{ $v }};{{ end }}`, "cluster=prod-eu;env=prod;"},
		{"revision", "{{ shortRevision .Revision }}", "main@sha1:0123456"},
		{"truncate", "{{ .Message | truncate 12 }}", "Deployment/…"},
		{"replace", `{{ .Reason | replace "HealthCheck" "Health " }}`, "Health Failed"},
		{"printf", `{{ printf "%-8s|" .Severity }}`, "error   |"},
		{"timestamp", `{{ .Timestamp.Format "15:04" }}`, "20:00"},
		{"if", `{{ if eq .Severity "error" }}:red_circle:{{ else }}:green_circle:{{ end }}`, ":red_circle:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := render(t, "", tc.tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Message).To(Equal(tc.want))
		})
	}
}

func TestRenderWithoutTemplatesSendsTheEventAsItIs(t *testing.T) {
	g := NewWithT(t)
	out, err := render(t, "", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(Rendered{Message: degraded().Message}))
}

// A hostile Alert's template is refused when parsed, so it never holds one
// of the execution slots every Alert shares: the other Alerts' templates
// keep rendering.
func TestAHostileRangeLeavesOtherAlertsWorking(t *testing.T) {
	g := NewWithT(t)
	for range maxRunning + 1 {
		_, err := Parse(alert("{{ range .Timestamp.UnixNano }}{{ end }}", ""))
		g.Expect(err).To(HaveOccurred())
	}
	out, err := render(t, "{{ .Reason }} in {{ .Metadata.cluster }}", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Summary).To(Equal("HealthCheckFailed in prod-eu"))
}

func TestParseRefusesTemplatesItCannotRunSafely(t *testing.T) {
	for _, tc := range []struct{ name, summary, message, want string }{
		{"syntax", "{{ .Reason ", "", "spec.summary: "},
		{"unknown function", "", "{{ env \"HOME\" }}", `spec.messageTemplate: message:1: function "env" not defined`},
		{"define", "", `{{ define "x" }}a{{ end }}{{ template "x" }}`, "{{define}} and {{block}} are not supported"},
		{"template", "", `{{ template "summary" }}`, "{{template}} is not supported"},
		{"nested range", "", `{{ range .Metadata }}{{ range $.Metadata }}x{{ end }}{{ end }}`, "inside another {{range}}"},
		{"range over a number", "", `{{ range 1000000000 }}x{{ end }}`, "over a field of the event only"},
		{"range over a variable", "", `{{ $m := .Metadata }}{{ range $m }}x{{ end }}`, "over a field of the event only"},
		// Fields that lead to a number, a method or a string: Go ranges
		// over integers, so these would loop for ever printing nothing.
		{"range over a method's number", "{{ range .Timestamp.UnixNano }}{{ end }}", "", "spec.summary: {{range .Timestamp.UnixNano}}: .Timestamp.UnixNano is not a field of the event"},
		{"range over a time", "", "{{ range .Timestamp }}{{ end }}", "{{range .Timestamp}}: a time.Time"},
		{"range over a string", "", "{{ range .Message }}{{ end }}", "{{range .Message}}: a string"},
		{"range inside with", "", "{{ with .Timestamp }}{{ range .Nanosecond }}{{ end }}{{ end }}", "{{range}} inside {{with}} is not supported"},
		{"range over a pipeline", "", "{{ range .Metadata | len }}{{ end }}", "not a pipeline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse(alert(tc.summary, tc.message))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestExecutionIsBoundedAndFallsBack(t *testing.T) {
	for _, tc := range []struct{ name, message, want string }{
		{"output bound", `{{ range .Metadata }}` + strings.Repeat("{{ printf \"%256s\" . }}", 40) + `{{ end }}`, "more than 16384 bytes"},
		{"printf width", `{{ printf "%999999999d" 1 }}`, "widths and precisions are at most 256"},
		{"printf star", `{{ printf "%*d" 999999999 1 }}`, "* widths are not supported"},
		{"replace growth", `{{ .Message | replace "" "` + strings.Repeat("x", 1000) + `" }}`, "more than 16384 bytes"},
		// Each step doubles what the last built: bounded by the budget of
		// the whole execution, not only by each result's size.
		{"doubling a variable", `{{ $x := .Message }}` + strings.Repeat(`{{ $x = print $x $x }}`, 30) + `{{ len $x }}`, "builds more than 262144 bytes"},
		{"doubling dot", strings.Repeat(`{{ with print . . }}`, 30) + `{{ len . }}` + strings.Repeat(`{{ end }}`, 30), "builds more than 262144 bytes"},
		{"doubling with printf", `{{ $x := .Message }}` + strings.Repeat(`{{ $x = printf "%s%s" $x $x }}`, 30), "builds more than 262144 bytes"},
		{"escaping again and again", `{{ $x := print "<&>" .Message }}` + strings.Repeat(`{{ $x = js (html $x) }}`, 20), "builds more than 262144 bytes"},
		{"quoting again and again", `{{ $x := .Message }}` + strings.Repeat(`{{ $x = quote $x }}`, 40), "builds more than 262144 bytes"},
		{"index out of range", `{{ slice .Message 0 9999 }}`, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := render(t, "s {{ .Reason }}", tc.message)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).To(HavePrefix("spec.messageTemplate: "))
			g.Expect(out.Message).To(Equal(degraded().Message), "the untemplated message")
			g.Expect(out.Summary).To(Equal("s HealthCheckFailed"), "the summary that rendered is kept")
		})
	}
}

func TestTheSummaryIsBoundedToo(t *testing.T) {
	g := NewWithT(t)
	summary := `{{ printf "%256s%256s%256s%256s%256s" "a" "b" "c" "d" "e" }}`
	out, err := render(t, summary, "")
	g.Expect(err).To(MatchError(ContainSubstring("spec.summary: ")))
	g.Expect(err).To(MatchError(ContainSubstring("more than 1024 bytes")))
	g.Expect(out.Summary).To(Equal(summary), "spec.summary as written")
}

// FuzzTemplates: whatever a user writes, Parse refuses it or Render
// returns within the output bounds, with the untemplated message when it
// fails.
func FuzzTemplates(f *testing.F) {
	for _, seed := range []string{
		"{{ .Reason }}", "{{ range .Metadata }}{{ . }}{{ end }}", `{{ printf "%256s" .Message }}`,
		`{{ .Message | replace "a" "bb" | truncate 3 }}`, "{{ range 10 }}x{{ end }}", "{{ slice .Message 3 1 }}",
		`{{ define "a" }}{{ end }}`, "{{", "}}", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tmpl, err := Parse(alert("", text))
		if err != nil {
			return
		}
		out, err := tmpl.Render(degraded())
		if len(out.Message) > MaxMessageBytes {
			t.Fatalf("rendered %d bytes", len(out.Message))
		}
		if err != nil && out.Message != degraded().Message {
			t.Fatalf("failed (%v) but did not fall back: %q", err, out.Message)
		}
	})
}
