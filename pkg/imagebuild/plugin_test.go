package imagebuild

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestThePluginImageBuildsAndChecks builds the example plugin's image as
// `make images` does, for this machine's platform only (the Makefile's
// two are checked alike by the images command), and checks it as every
// image is checked: user 65532, /envsubst the entrypoint, no shell, and
// the binary starting with --help. And `make images` names it.
func TestThePluginImageBuildsAndChecks(t *testing.T) {
	if len(PluginPrograms) != 1 || PluginPrograms[0].Name != PluginImage {
		t.Fatalf("PluginPrograms = %+v, want the one example plugin %s", PluginPrograms, PluginImage)
	}
	p := PluginPrograms[0]
	o := options(t, host)
	o.Dir = root
	idx, err := Build(context.Background(), o, p.Package)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(context.Background(), idx, p.Binary(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(imageDigest(t, idx, host))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/envsubst" {
		t.Fatalf("config: user %q, entrypoint %q; want 65532:65532 and /envsubst", cf.Config.User, cf.Config.Entrypoint)
	}

	// `make images` builds it: make -n prints the command it would run.
	out, err := exec.Command("make", "-C", root, "-n", "images", "VERSION=v0", "COMMIT=c", "SOURCE_DATE_EPOCH=0").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n images: %v: %s", err, out)
	}
	if !strings.Contains(string(out), " "+PluginImage) {
		t.Fatalf("make images does not build %s: %s", PluginImage, out)
	}
}
