package renderworker

import (
	"bytes"
	"reflect"
	"testing"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
)

// TestEveryHelmOptionReachesTheWorker sends helmrender.Options with every
// field set across the process boundary's encoding and reads back the
// same options: a new option that did not survive the trip would render
// differently in a worker than in process.
func TestEveryHelmOptionReachesTheWorker(t *testing.T) {
	opts := helmrender.Options{
		ReleaseName: "web",
		Namespace:   "apps",
		// JSON numbers decode as float64, as helmrender.Render reads them.
		Values:       map[string]any{"replicas": float64(2), "image": map[string]any{"tag": "1.2.3"}},
		Capabilities: helmrender.Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"apps/v1", "apps/v1/Deployment"}},
		IsInstall:    true,
		Revision:     4,
		CRDs:         helmv2.CRDsCreateReplace,
		PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
			Images: []kustomizev1.Image{{Name: "web", NewTag: "1.2.4"}},
		}}},
		CommonMetadata:          &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}},
		Record:                  true,
		DisableSchemaValidation: true,
	}
	fillInt64s(t, reflect.ValueOf(&opts.Limits).Elem())
	v := reflect.ValueOf(opts)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("helmrender.Options.%s is not set in this test: set it, so the test covers it", v.Type().Field(i).Name)
		}
	}

	var wire bytes.Buffer
	if err := writeMessage(&wire, &request{Helm: &opts}, []byte("archive")); err != nil {
		t.Fatal(err)
	}
	var got request
	blob, err := readMessage(&wire, &got, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got.Helm == nil || !reflect.DeepEqual(*got.Helm, opts) {
		t.Errorf("the worker reads\n%+v\nwant\n%+v", got.Helm, opts)
	}
	if string(blob) != "archive" {
		t.Errorf("blob %q, want the archive", blob)
	}
}

// fillInt64s gives every int64 field of a struct of them a distinct value.
func fillInt64s(t *testing.T, s reflect.Value) {
	t.Helper()
	for i := range s.NumField() {
		f := s.Field(i)
		if f.Kind() != reflect.Int64 {
			t.Fatalf("%s.%s is a %s: fill it by hand", s.Type(), s.Type().Field(i).Name, f.Kind())
		}
		f.SetInt(int64(1000 + i))
	}
}
