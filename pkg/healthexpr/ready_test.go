package healthexpr_test

import (
	"fmt"
	"strings"
	"testing"

	"plumb.dev/pkg/healthexpr"
)

// Flux's lockstep example: the dependency is ready when it carries the
// dependent's version label and is Ready at its generation.
const lockstep = `dep.metadata.labels['app/version'] == self.metadata.labels['app/version'] &&
  dep.status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True') &&
  dep.metadata.generation == dep.status.observedGeneration`

func TestReadyExpr(t *testing.T) {
	self := decode(t, "apiVersion: kustomize.plumb.dev/v1\nkind: Kustomization\nmetadata: {name: frontend, labels: {app/version: v2}}").Object
	dep := func(version, ready string, observed int) map[string]any {
		return decode(t, "apiVersion: kustomize.plumb.dev/v1\nkind: Kustomization\nmetadata: {name: backend, generation: 3, labels: {app/version: "+version+"}}\n"+
			"status: {observedGeneration: "+fmt.Sprint(observed)+", conditions: [{type: Ready, status: '"+ready+"'}]}").Object
	}
	e, err := healthexpr.CompileReady(lockstep)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		dep  map[string]any
		want bool
	}{
		{"same version, ready", dep("v2", "True", 3), true},
		{"other version", dep("v1", "True", 3), false},
		{"not ready", dep("v2", "False", 3), false},
		{"older generation", dep("v2", "True", 2), false},
	} {
		got, err := e.Ready(self, tt.dep)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	// A field dep does not have is an error, not a verdict.
	if _, err := e.Ready(self, map[string]any{"metadata": map[string]any{}}); err == nil {
		t.Error("a dependency without labels or status was judged")
	}
}

// What cannot work is refused when compiled, naming the expression: a
// syntax error, a variable other than self and dep, a result that is not
// a bool.
func TestReadyExprCompileErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"dep.metadata.name ==":      "does not compile",
		"other.status.ready":        "undeclared reference to 'other'",
		"size(dep.metadata.labels)": "not a bool",
		strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100): "does not compile",
	} {
		_, err := healthexpr.CompileReady(expr)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), expr[:min(len(expr), 20)]) {
			t.Errorf("%.40s: got %v, want an error with %q", expr, err, want)
		}
	}
}

// An expression that would loop over a large list stops at the cost limit.
func TestReadyExprCostLimit(t *testing.T) {
	e, err := healthexpr.CompileReady("dep.items.all(a, dep.items.all(b, dep.items.all(c, a + b + c >= 0)))")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = int64(i)
	}
	_, err = e.Ready(map[string]any{}, map[string]any{"items": items})
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("got %v, want the cost limit", err)
	}
}
