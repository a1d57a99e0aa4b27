package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// versionPackage is where Plumb's programs read their version and commit
// (Options.VersionPackage names another, e.g. main for the examples).
const versionPackage = "plumb.dev/pkg/version"

// buildTags leave kustomize's Go-plugin loader out, as the Makefile does
// (pkg/render's goplugin_test.go): render- and source-controller run
// kustomize with plugins off, so the loader is dead code in every build.
const buildTags = "kustomize_disable_go_plugin_support"

// goBuild compiles pkg (a package path as `go build` takes it, run in dir)
// for p into out, linking version and commit into versionPkg's Version and
// Commit. Everything that could differ between two hosts is set: see the
// package comment's "Reproducible".
func goBuild(ctx context.Context, dir, pkg string, p v1.Platform, versionPkg, version, commit, out string) error {
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s", versionPkg, version, versionPkg, commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags="+buildTags, "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0",
		"GOOS="+p.OS,
		"GOARCH="+p.Architecture,
		// The host's GOFLAGS could add -race, -tags or -ldflags of its own.
		"GOFLAGS=",
		// The baseline of each architecture, so the image runs on any CPU
		// of it whatever the build host exports.
		"GOAMD64=v1",
		"GOARM64=v8.0",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w: %s", pkg, platformString(p), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func platformString(p v1.Platform) string { return p.OS + "/" + p.Architecture }

// ParsePlatform reads "linux/amd64" or "linux/arm64", the two platforms
// whose baseline goBuild pins (GOAMD64, GOARM64); any other is refused
// rather than built with settings nothing here controls.
func ParsePlatform(s string) (v1.Platform, error) {
	switch s {
	case "linux/amd64", "linux/arm64":
		os, arch, _ := strings.Cut(s, "/")
		return v1.Platform{OS: os, Architecture: arch}, nil
	}
	return v1.Platform{}, fmt.Errorf("platform %q: images are built for linux/amd64 and linux/arm64 only", s)
}

// binaryName is a program's name: the last element of its package path,
// or the one before a major version suffix, as `go install` names it
// (github.com/nats-io/nats-server/v2 is nats-server).
func binaryName(pkg string) string {
	pkg = filepath.Clean(pkg)
	base := filepath.Base(pkg)
	if majorSuffix.MatchString(base) && filepath.Dir(pkg) != "." {
		return filepath.Base(filepath.Dir(pkg))
	}
	return base
}

// majorSuffix is a module path's major version element: v2, v3 …
var majorSuffix = regexp.MustCompile(`^v[2-9][0-9]*$|^v[1-9][0-9]+$`)
