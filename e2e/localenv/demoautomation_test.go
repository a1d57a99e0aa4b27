package localenv

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"

	"plumb.dev/pkg/imagebuild"
	"plumb.dev/pkg/imageupdate"
)

// The sample as DeployDemo pushes it with the image automation: its
// ImagePolicy's first ref (the registry's web image, the sample's version)
// changes nothing, so the automation's first run makes no commit; a new
// tag changes the Deployment's image line alone, marker kept.
func TestTheSamplesMarkerTakesTheWebImagesTagOnly(t *testing.T) {
	e := &Env{Root: filepath.Join("..", "..")}
	files, err := e.DemoAppFiles("app")
	if err != nil {
		t.Fatal(err)
	}
	if err := PointDemoImages(files, testRegistry); err != nil {
		t.Fatal(err)
	}
	pointDemoMarkers(files, "team", testRegistry)
	web := imagebuild.ExampleImage(testRegistry, DemoImageName)
	for tag, wantChanges := range map[string]int{imagebuild.ExampleVersion: 0, "1.0.1": 1} {
		tree := memfs.New()
		for name, content := range files {
			f, err := tree.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(f, content)
			_ = f.Close()
		}
		res, err := imageupdate.Setters(context.Background(), tree, ".", map[string]imageupdate.ImageRef{
			"team:" + DemoImageName: {Name: web, Tag: tag},
		}, imageupdate.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Changes()); got != wantChanges {
			t.Fatalf("tag %s: %d changes (%v), want %d", tag, got, res.Changes(), wantChanges)
		}
		f, err := tree.Open("deployment.yaml")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		_ = f.Close()
		want := strings.Replace(files["deployment.yaml"], web+":"+imagebuild.ExampleVersion+" #", web+":"+tag+" #", 1)
		if !strings.Contains(want, `image: `+web+`:`+tag+` # {"$imagepolicy": "team:web"}`) {
			t.Fatalf("the pointed sample has no marked image line of %s:\n%s", web, files["deployment.yaml"])
		}
		if string(b) != want {
			t.Errorf("tag %s: deployment.yaml is\n%s\nwant\n%s", tag, b, want)
		}
	}
}
