package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource, Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestForeignOwnersNamesWhoOwnsTheDriftedFields(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry(manage.FieldManager, "", `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}}`),
		entry("kube-controller-manager", "scale", `{"f:spec":{"f:replicas":{}}}`),
		entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`),
		entry("kubectl-edit", "", `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`),
	}
	cases := []struct {
		path string
		want []string
	}{
		{"spec.replicas", []string{"kube-controller-manager"}},
		{"spec.template.spec.containers[0].image", []string{"kubectl-edit"}},
		{`metadata.labels["app.kubernetes.io/name"]`, []string{"kubectl-edit"}},
		{"spec.paused", nil},
		{"status.replicas", nil},
	}
	for _, c := range cases {
		got := foreignOwners(entries, []diff.Change{{Path: c.path}})
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
			t.Errorf("%s: owners %v, want %v", c.path, got, c.want)
		}
	}
}
