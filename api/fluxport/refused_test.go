package fluxport

import (
	"strings"
	"testing"
)

// The API server's two ways of refusing a field both get the reason: a
// server-side apply's and a strict create's.
func TestExplainNamesTheReasonOfEachRefusedField(t *testing.T) {
	for _, tc := range []struct {
		name, kind, message string
		want                []string
	}{
		{"server-side apply", "GitRepository",
			`failed to create typed patch object (ns/repo; source.plumb.dev/v1, Kind=GitRepository): .spec.serviceAccountName: field not declared in schema`,
			[]string{"Flux's spec.serviceAccountName: " + workloadIdentity}},
		{"strict create, two fields", "Provider",
			`Provider.notification.plumb.dev "slack" is invalid: [unknown field "spec.interval", unknown field "spec.proxy"]`,
			[]string{"Flux's spec.interval: deprecated in Flux", "a Provider has nothing", "Flux's spec.proxy: deprecated in Flux for proxySecretRef"}},
		{"a nested field", "HelmRelease",
			`failed to create typed patch object (apps/podinfo; helm.plumb.dev/v2, Kind=HelmRelease): .spec.upgrade.preserveValues: field not declared in schema`,
			[]string{"Flux's spec.upgrade.preserveValues: the values are Git's alone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(tc.kind, tc.message)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// A field that is not Flux's, or one of another kind, gets no reason: the
// API server's message is the whole story.
func TestExplainSaysNothingOfFieldsItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct{ kind, message string }{
		{"GitRepository", `.spec.shiny: field not declared in schema`},
		{"Kustomization", `.spec.serviceAccountName: field not declared in schema`},
		{"GitRepository", `some other error`},
	} {
		if got := Explain(tc.kind, tc.message); got != "" {
			t.Errorf("Explain(%s, %q) = %q, want nothing", tc.kind, tc.message, got)
		}
	}
}
