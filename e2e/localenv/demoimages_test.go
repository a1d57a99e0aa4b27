package localenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testhelm"
)

const testRegistry = "127.0.0.1:5000/plumb"

// The sample as sync-controller renders it: without a registry its images
// keep their neutral names; pointed at one, the Deployment and the hook Job
// pull from it, tagged with the sample's version.
func TestTheSampleAppsImagesArePointedAtTheRegistry(t *testing.T) {
	for registry, want := range map[string][]string{
		"":           {"image: plumb.dev/examples/web:1.0.0", "image: plumb.dev/examples/hook:1.0.0"},
		testRegistry: {"image: " + testRegistry + "/examples/web:1.0.0", "image: " + testRegistry + "/examples/hook:1.0.0"},
	} {
		e := &Env{Root: filepath.Join("..", "..")}
		files, err := e.DemoAppFiles("app")
		if err != nil {
			t.Fatal(err)
		}
		if err := PointDemoImages(files, registry); err != nil {
			t.Fatal(err)
		}
		work := t.TempDir()
		src := render.SourceDir(work)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := render.Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: "./"}, render.Options{})
		if err != nil {
			t.Fatalf("registry %q: %v", registry, err)
		}
		expectImages(t, "the app", string(res.Manifests), want)
	}
	if err := PointDemoImages(map[string]string{"kustomization.yaml": "resources: []\nimages:\n  - name: x\n"}, testRegistry); err == nil {
		t.Error("an images: list of the sample's own was replaced without a word")
	}
}

// The chart with the values helm-demo.yaml gives (WEB_IMAGE, HOOK_IMAGE)
// names the images in the registry, the hook's too.
func TestTheSampleChartsImagesComeFromTheValues(t *testing.T) {
	tgz, err := testhelm.PackageDir(filepath.Join("..", "..", DemoChartDir))
	if err != nil {
		t.Fatal(err)
	}
	for registry, want := range map[string][]string{
		"":           {"image: plumb.dev/examples/web:1.0.0", "image: plumb.dev/examples/hook:1.0.0"},
		testRegistry: {"image: " + testRegistry + "/examples/web:1.0.0", "image: " + testRegistry + "/examples/hook:1.0.0"},
	} {
		vars := demoImageVars(registry)
		values := map[string]any{"image": map[string]any{"web": vars["WEB_IMAGE"], "hook": vars["HOOK_IMAGE"]}}
		res, err := helmrender.Render(context.Background(), tgz, helmrender.Options{ReleaseName: "hello", Namespace: "app", Values: values})
		if err != nil {
			t.Fatal(err)
		}
		expectImages(t, "the chart", string(res.Manifests), want)
	}
}

func expectImages(t *testing.T, what, manifests string, want []string) {
	t.Helper()
	if n := strings.Count(manifests, "image: "); n != len(want) {
		t.Errorf("%s names %d images, want %d:\n%s", what, n, len(want), manifests)
	}
	for _, w := range want {
		if !strings.Contains(manifests, w) {
			t.Errorf("%s has no %q:\n%s", what, w, manifests)
		}
	}
}
