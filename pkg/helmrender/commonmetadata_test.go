package helmrender

import (
	"testing"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// commonMetadata labels and annotates every object of the templates, hooks
// included, after the post-renderers (its value wins over a patch's), and
// leaves the CRDs of crds/ alone, as Flux's last post-renderer does.
func TestCommonMetadata(t *testing.T) {
	archive := packageChart(t, "app", nil)
	opts := baseOptions()
	opts.CRDs = helmv2.CRDsCreateReplace
	opts.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomizev1.Patch{{
		Patch:  `[{"op": "add", "path": "/metadata/labels/team", "value": "from-patch"}]`,
		Target: &kustomizev1.Selector{Kind: "Service"},
	}}}}}
	opts.CommonMetadata = &kustomizev1.CommonMetadata{
		Labels:      map[string]string{"team": "platform"},
		Annotations: map[string]string{"example.com/owner": "ops"},
	}
	res := mustRender(t, archive, opts)
	objs := objects(t, res.Manifests)
	for id, n := range objs {
		l, a := n.GetLabels(), n.GetAnnotations()
		if a["plumb.dev/prune"] == "disabled" { // a CRD of a crds/ folder
			if l["team"] != "" || a["example.com/owner"] != "" {
				t.Errorf("a crds/ CRD got commonMetadata: labels %v, annotations %v", l, a)
			}
			continue
		}
		if l["team"] != "platform" || a["example.com/owner"] != "ops" {
			t.Errorf("%s: labels %v, annotations %v, want commonMetadata's", id, l, a)
		}
	}
	if job := objs["Job/web-app-migrate"]; job == nil || job.GetAnnotations()["helm.sh/hook"] == "" {
		t.Errorf("the hook lost its annotations or is missing: %v", job)
	}
	if res.Objects != 8 {
		t.Errorf("%d objects, want 8", res.Objects)
	}

	// Without it, the render is the chart's alone.
	opts.CommonMetadata = nil
	plain := objects(t, mustRender(t, archive, opts).Manifests)
	if got := plain["Service/web-app"].GetLabels()["team"]; got != "from-patch" {
		t.Errorf("Service label team=%q without commonMetadata, want the patch's", got)
	}
	if got := plain["Deployment/web-app"].GetAnnotations()["example.com/owner"]; got != "" {
		t.Errorf("Deployment annotated %q without commonMetadata", got)
	}
}
