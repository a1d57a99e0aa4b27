package helmrender

import (
	"testing"
)

func TestRenderChart(t *testing.T) {
	archive := packageChart(t, "app", nil)
	res := mustRender(t, archive, baseOptions())
	t.Logf("%s", res.Manifests)
	objs := objects(t, res.Manifests)
	for _, key := range []string{"Deployment/web-app", "Service/web-app", "ConfigMap/web-app-config", "Job/web-app-migrate", "Pod/web-app-test-", "CustomResourceDefinition/widgets.example.com"} {
		if objs[key] == nil {
			t.Errorf("missing %s", key)
		}
	}
	if len(objs) != 6 || res.Objects != 6 {
		t.Errorf("got %d objects (Result.Objects %d), want 6", len(objs), res.Objects)
	}
	if res.ChartName != "app" || res.ChartVersion != "1.2.3" {
		t.Errorf("chart %s %s", res.ChartName, res.ChartVersion)
	}
}
