package object

import "testing"

func TestIDTextParsesBack(t *testing.T) {
	for _, id := range []ID{
		{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "web"},
		{Kind: "ConfigMap", Namespace: "prod", Name: "settings.v1"},
		{Kind: "Namespace", Name: "prod"},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:aggregate-to-view"},
	} {
		got, err := ParseText(id.Text())
		if err != nil || got != id {
			t.Errorf("ParseText(%q) = %+v, %v; want %+v", id.Text(), got, err, id)
		}
	}
}

func TestParseTextRefusesWhatNoObjectIsCalled(t *testing.T) {
	for _, s := range []string{
		"", "apps/Deployment/web", "apps/Deployment/prod/web/extra", "apps/Deployment/prod/",
		"apps/Deployment/../web", "apps/Deployment/prod/..", "apps/Deployment/prod/%2e%2e",
		"Apps_/Deployment/prod/web", "apps/Deploy-ment/prod/web", "apps//prod/web",
	} {
		if id, err := ParseText(s); err == nil {
			t.Errorf("ParseText(%q) = %+v, want an error", s, id)
		}
	}
}
