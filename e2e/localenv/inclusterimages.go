package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"plumb.dev/pkg/imagebuild"
)

// Plumb installed on a real node (`plumb install`, e2e/incluster_test.go)
// pulls the images deploy/ names, unchanged: ghcr.io/plumb-dev/<controller>
// and nats:<tag>, which is docker.io/library/nats. containerd asks the
// launcher's registry for every registry (nodeconfig.go's _default hosts),
// under the image's path, so the images are pushed there as
// plumb-dev/<controller>:<version> and library/nats:<tag>.
const (
	// PlumbImagePath is deploy/'s images' path under ghcr.io.
	PlumbImagePath = "plumb-dev"
	// natsImagePath is the path of Docker Hub's official images.
	natsImagePath = "library"
	// natsPackage is nats-server's main package; its version is the one
	// Plumb's modules require (pkg/go.mod), which deploy/nats names.
	natsPackage = "github.com/nats-io/nats-server/v2"
)

// PlumbControllerPrograms are the images of deploy/'s Deployments:
// imagebuild.PlumbPrograms and image-controller, which `make images`
// builds too (the Makefile's PROGRAMS).
func PlumbControllerPrograms() []imagebuild.Program {
	programs := slices.Clone(imagebuild.PlumbPrograms)
	for _, p := range programs {
		if p.Name == ImageController {
			return programs
		}
	}
	return append(programs, imagebuild.Program{
		Name: ImageController, Package: "./" + ImageController, Sources: []string{ImageController, "api", "pkg"},
	})
}

// PushPlumbImages builds (or takes from ~/.cache/plumb/images) Plumb's
// images tagged version and nats-server at the tag deploy/nats names, and
// pushes them to the real node's registry under deploy/'s names, once per
// registry and version: the builds are reproducible, so a second push
// would push the same images.
func (e *Env) PushPlumbImages(ctx context.Context, version string) error {
	if e.Registry == nil {
		return fmt.Errorf("no real node: Plumb's images go to its registry")
	}
	r := e.Registry
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.plumbVersions[version] {
		e.progress("image: Plumb's images %s are in the registry already", version)
		return nil
	}
	if err := e.pushPlumbImages(ctx, version); err != nil {
		return err
	}
	if r.plumbVersions == nil {
		r.plumbVersions = map[string]bool{}
	}
	r.plumbVersions[version] = true
	return nil
}

func (e *Env) pushPlumbImages(ctx context.Context, version string) error {
	logf := func(format string, args ...any) { e.progress("image "+format, args...) }
	if _, err := imagebuild.PushLocal(ctx, imagebuild.LocalOptions{
		Root: e.Root, Registry: e.Registry.Addr + "/" + PlumbImagePath, Programs: PlumbControllerPrograms(),
		Version: version, Logf: logf,
	}); err != nil {
		return fmt.Errorf("pushing Plumb's images: %w", err)
	}
	tag, err := NATSImageTag(e.Root)
	if err != nil {
		return err
	}
	nats := imagebuild.Program{
		Name: "nats", Package: natsPackage,
		// Its source is the module go.work's build list pins; the
		// workspace's go.mod and go.sum files are in every cache key.
		Version: tag,
	}
	if _, err := imagebuild.PushLocal(ctx, imagebuild.LocalOptions{
		Root: e.Root, Registry: e.Registry.Addr + "/" + natsImagePath, Programs: []imagebuild.Program{nats}, Logf: logf,
	}); err != nil {
		return fmt.Errorf("pushing the NATS image: %w", err)
	}
	return nil
}

var (
	natsImageRE  = regexp.MustCompile(`(?m)^\s*image:\s*nats:(\S+)\s*$`)
	natsModuleRE = regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 v(\S+)`)
)

// NATSImageTag is the tag of deploy/nats's image, which must be the
// nats-server release Plumb's modules build with (pkg/go.mod): the image
// pushed under that tag is built from that module.
func NATSImageTag(root string) (string, error) {
	sts, err := os.ReadFile(filepath.Join(root, "deploy", "nats", "statefulset.yaml"))
	if err != nil {
		return "", err
	}
	m := natsImageRE.FindSubmatch(sts)
	if m == nil {
		return "", fmt.Errorf("deploy/nats/statefulset.yaml names no nats:<tag> image")
	}
	tag := string(m[1])
	mod, err := os.ReadFile(filepath.Join(root, "pkg", "go.mod"))
	if err != nil {
		return "", err
	}
	have := "none"
	if v := natsModuleRE.FindSubmatch(mod); v != nil {
		have = string(v[1])
	}
	if have != tag {
		return "", fmt.Errorf("deploy/nats/statefulset.yaml names nats:%s, pkg/go.mod requires nats-server %s: the image is built from the module, keep them equal", tag, have)
	}
	return tag, nil
}
