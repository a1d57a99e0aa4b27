package drift

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

func entry(manager, subresource, fields string, at time.Time) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource, Operation: metav1.ManagedFieldsOperationUpdate,
		Time: &metav1.Time{Time: at}, FieldsV1: metav1.NewFieldsV1(fields)}
}

var (
	earlier = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	later   = earlier.Add(time.Minute)
	entries = []metav1.ManagedFieldsEntry{
		entry(manage.FieldManager, "", `{"f:spec":{"f:replicas":{},"f:paused":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}}`, earlier),
		entry("kube-controller-manager", "scale", `{"f:spec":{"f:replicas":{}}}`, earlier),
		entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`, later),
		entry("kubectl-edit", "", `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`, earlier),
		entry("helm", "", `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}}}`, later),
		entry("broken", "", `not json`, later),
	}
)

func TestForeignManagersNameWhoOwnsTheDriftedFields(t *testing.T) {
	m := ForeignManagersOf(entries)
	cases := []struct {
		path string
		want string
	}{
		{"spec.replicas", "kube-controller-manager"},
		{"spec.template.spec.containers[0].image", "kubectl-edit"},
		// Two own it; the later write is who changed it.
		{`metadata.labels["app.kubernetes.io/name"]`, "helm"},
		// plumb-sync's own field, and a status write, name nobody.
		{"spec.paused", ""},
		{"status.replicas", ""},
		{"spec.missing", ""},
	}
	for _, c := range cases {
		if got := m.Of(c.path); got != c.want {
			t.Errorf("Of(%s) = %q, want %q", c.path, got, c.want)
		}
		var want []string
		if c.want != "" {
			want = []string{c.want}
		}
		got := m.Owning([]diff.Change{{Path: c.path}})
		if c.path == `metadata.labels["app.kubernetes.io/name"]` {
			want = []string{"helm", "kubectl-edit"}
		}
		if len(got) != len(want) || (len(got) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
			t.Errorf("Owning(%s) = %v, want %v", c.path, got, want)
		}
	}
	if got := m.Owning([]diff.Change{{Path: "spec.replicas"}, {Path: "spec.template.spec.containers[0].image"}}); len(got) != 2 {
		t.Errorf("Owning two fields = %v, want both managers", got)
	}
}

func TestManagerOfReadsTheLiveObject(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{}}
	live.SetManagedFields(entries[:len(entries)-1]) // an unparsable entry cannot be set
	if got := ManagerOf(live, "spec.template.spec.containers[0].image"); got != "kubectl-edit" {
		t.Errorf("ManagerOf = %q, want kubectl-edit", got)
	}
	if got := ManagerOf(nil, "spec.replicas"); got != "" {
		t.Errorf("ManagerOf(nil) = %q, want nothing", got)
	}
}
