package helmrender

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
)

func decodeRecord(t *testing.T, b []byte) *release.Release {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	j, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	rel := &release.Release{}
	if err := json.Unmarshal(j, rel); err != nil {
		t.Fatal(err)
	}
	return rel
}

func TestARecordedRenderHoldsHelmsReleaseFieldsAndOwnershipMetadata(t *testing.T) {
	archive := packageChart(t, "app", nil)
	plain := mustRender(t, archive, baseOptions())
	if plain.Record != nil || bytes.Contains(plain.Manifests, []byte(ReleaseNameAnnotation)) {
		t.Fatal("a render without Options.Record has a record or Helm's ownership metadata")
	}
	opts := baseOptions()
	opts.Record = true
	opts.Values = map[string]any{"replicas": 3}
	res := mustRender(t, archive, opts)
	if res.Record == nil || len(res.Record) > MaxRecordBytes {
		t.Fatalf("record of %d bytes (omitted: %q)", len(res.Record), res.RecordOmitted)
	}
	for key, n := range objects(t, res.Manifests) {
		_, hook := n.GetAnnotations()[release.HookAnnotation]
		crd := strings.HasPrefix(key, "CustomResourceDefinition/")
		stamped := n.GetLabels()[ManagedByLabel] == ManagedByHelm &&
			n.GetAnnotations()[ReleaseNameAnnotation] == "web" && n.GetAnnotations()[ReleaseNamespaceAnnotation] == "apps"
		_, named := n.GetAnnotations()[ReleaseNameAnnotation]
		switch {
		case hook || crd:
			if named {
				t.Errorf("%s: a hook or a CRD of crds/ has Helm's ownership annotations, which Helm does not write on it", key)
			}
		case !stamped:
			t.Errorf("%s: no Helm ownership metadata: %v %v", key, n.GetLabels(), n.GetAnnotations())
		}
	}

	rel := decodeRecord(t, res.Record)
	if rel.Chart == nil || rel.Chart.Metadata == nil || rel.Chart.Metadata.Name != "app" || rel.Chart.Metadata.Version != "1.2.3" {
		t.Fatalf("chart metadata %+v", rel.Chart)
	}
	if len(rel.Chart.Templates) != 0 {
		t.Error("the record holds the chart's templates")
	}
	if rel.Config["replicas"] != float64(3) || len(rel.Config) != 1 {
		t.Errorf("config %v, want the user's values only", rel.Config)
	}
	if len(rel.Chart.Values) == 0 {
		t.Error("the record has no default values")
	}
	if !strings.HasPrefix(rel.Info.Notes, "Thank you for installing app") {
		t.Errorf("notes %q", rel.Info.Notes)
	}
	if !strings.Contains(rel.Manifest, "# Source: app/templates/deployment.yaml\n") || strings.Contains(rel.Manifest, ReleaseNameAnnotation) {
		t.Errorf("manifest without its sources, or with the ownership metadata Helm adds after recording it:\n%s", rel.Manifest)
	}
	if strings.Contains(rel.Manifest, "CustomResourceDefinition") {
		t.Error("the manifest holds the CRDs of crds/, which Helm's does not")
	}
	hooks := map[string]*release.Hook{}
	for _, h := range rel.Hooks {
		hooks[h.Kind+"/"+h.Name] = h
		if strings.Contains(rel.Manifest, "name: "+h.Name+"\n") {
			t.Errorf("hook %s is in the manifest", h.Name)
		}
	}
	if h := hooks["Job/web-app-migrate"]; h == nil || len(h.Events) == 0 || h.Path == "" {
		t.Errorf("hooks %v: want Job web-app-migrate with its events and template", hooks)
	}
}

func TestARecordTooLargeForASecretDropsTheDefaultValuesThenItself(t *testing.T) {
	// Pseudo-random letters compress to about 5/8 of their size: twice the
	// limit does not fit.
	noise := func(n int) string {
		var b strings.Builder
		x := uint32(1)
		for b.Len() < n {
			x = x*1664525 + 1013904223
			b.WriteByte(byte('a' + x>>27))
		}
		return b.String()
	}
	rel := &release.Release{Chart: chartWithValues(map[string]any{"big": noise(2 * MaxRecordBytes)}), Info: &release.Info{}}
	b, omitted, err := encodeRecord(rel)
	if err != nil || omitted != "" || b == nil {
		t.Fatalf("encodeRecord: %v %q", err, omitted)
	}
	if got := decodeRecord(t, b); got.Chart.Values != nil {
		t.Error("the default values were kept though they did not fit")
	}
	rel = &release.Release{Chart: chartWithValues(nil), Info: &release.Info{}, Manifest: noise(2 * MaxRecordBytes)}
	b, omitted, err = encodeRecord(rel)
	if err != nil || b != nil || !strings.Contains(omitted, "more than a release Secret holds") {
		t.Fatalf("encodeRecord of a manifest too large: %d bytes, %q, %v", len(b), omitted, err)
	}
}

func chartWithValues(values map[string]any) *chart.Chart {
	return &chart.Chart{Metadata: &chart.Metadata{Name: "big", Version: "1.0.0"}, Values: values}
}
