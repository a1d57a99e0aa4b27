package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// noGoPluginsTag is the build tag that leaves kustomize's Go-plugin loader
// (and with it package plugin) out of a program. Plumb never loads a
// kustomize Go plugin (runKustomize disables plugins), and a program that
// links package plugin with cgo keeps every exported method of every type
// and a dynamic symbol table of the whole program: render- and
// source-controller as make builds them were some 40 MB larger and 8-25
// MiB more resident each than the images' CGO_ENABLED=0 build
// (docs/bench/helm-release.md, "Memory, session 2026-12-06").
const noGoPluginsTag = "kustomize_disable_go_plugin_support"

// TestTheBuildsLeaveOutGoPlugins checks that the tag still keeps package
// plugin out of the two programs that run kustomize (a new dependency
// importing it would bring the cost back whatever the tag), and that the
// Makefile (whose GOFLAGS the tests and scripts it runs inherit) and the
// image build (pkg/imagebuild) build with it.
func TestTheBuildsLeaveOutGoPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list on two programs")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, program := range []string{"render-controller", "source-controller"} {
		cmd := exec.Command("go", "list", "-deps", "-tags="+noGoPluginsTag, "./"+program)
		cmd.Dir = root
		// The Makefile's GOFLAGS would pass the tag already; this test
		// states it itself, so it means the same under a plain go test.
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", program, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "sigs.k8s.io/kustomize/api/krusty") {
			t.Fatalf("%s no longer links kustomize; this test guards nothing for it", program)
		}
		if slices.Contains(deps, "plugin") {
			t.Errorf("%s links package plugin even with -tags=%s: a dependency imports it; `go list -deps -f '{{.ImportPath}} {{.Imports}}' ./%s | grep -w plugin` names it", program, noGoPluginsTag, program)
		}
	}
	for file, want := range map[string]string{
		"Makefile":                  "NO_GO_PLUGINS := " + noGoPluginsTag,
		"pkg/imagebuild/gobuild.go": `buildTags = "` + noGoPluginsTag + `"`,
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not build with %q", file, want)
		}
	}
}
