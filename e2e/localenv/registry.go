package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plumb.dev/pkg/imagebuild"
)

// Registry is an OCI registry served from the launcher's process on
// 127.0.0.1, the only registry a real node pulls from: nothing comes from
// outside. Blobs are kept on disk under the environment's state folder, so
// Plumb's images do not sit in the launcher's memory.
type Registry struct {
	// Addr is host:port, the prefix of every image reference in it.
	Addr string
	srv  *http.Server
	done chan struct{}

	// built are the references BuildAndPush pushed, by package and tag:
	// the stories sharing a node push the same test programs.
	mu    sync.Mutex
	built map[string]string
	// plumbVersions are the versions PushPlumbImages pushed: the install
	// and bootstrap stories share a node and install the same images.
	plumbVersions map[string]bool
}

// startRegistry starts the Registry, logging to logs/registry.log, and
// pushes the sample's images (deploy/examples/images) to it: its
// Deployment, PreSync Job and chart name them, DeployDemo points them
// here, and the sample's ImageRepository scans them. A real node pulls
// them; with the pod simulator they are only tags to scan and retag.
func (e *Env) startRegistry(ctx context.Context) error {
	regLog, err := os.Create(filepath.Join(e.StateDir, "logs", "registry.log"))
	if err != nil {
		return err
	}
	if e.Registry, err = newRegistry(filepath.Join(e.StateDir, "registry"), regLog); err != nil {
		return err
	}
	e.progress("building the example app's images into the registry at %s (cached under ~/.cache/plumb/images)", e.Registry.Addr)
	if _, err := imagebuild.PushLocal(ctx, imagebuild.LocalOptions{
		Root: e.Root, Registry: e.Registry.Addr, Programs: imagebuild.ExamplePrograms,
	}); err != nil {
		return fmt.Errorf("the example app's images: %w", err)
	}
	return nil
}

// newRegistry serves a registry on a new port of 127.0.0.1, logging its
// requests to logw.
func newRegistry(dir string, logw io.Writer) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r := &Registry{
		Addr: ln.Addr().String(),
		srv: &http.Server{
			Handler: registry.New(
				registry.Logger(log.New(logw, "", log.LstdFlags)),
				registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)),
			),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Push stores idx as <Addr>/<program>:<tag> and returns that reference.
func (r *Registry) Push(ctx context.Context, program, tag string, idx v1.ImageIndex) (string, error) {
	ref, err := imagebuild.Reference(r.Addr, program, tag)
	if err != nil {
		return "", err
	}
	if err := imagebuild.Push(ctx, ref, idx); err != nil {
		return "", err
	}
	return ref.String(), nil
}

// BuildAndPush builds the Go program pkg (a package path relative to root,
// where go.work is) for this machine's platform with plumb.dev/pkg/imagebuild
// and pushes it as <Addr>/<last element of pkg>:<tag>.
//
// A program is built and pushed once per registry: the build is
// reproducible, so a second one would push the same image.
func (r *Registry) BuildAndPush(ctx context.Context, root, pkg, tag string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := pkg + ":" + tag
	if ref, ok := r.built[key]; ok {
		return ref, nil
	}
	ref, err := r.buildAndPush(ctx, root, pkg, tag)
	if err != nil {
		return "", err
	}
	if r.built == nil {
		r.built = map[string]string{}
	}
	r.built[key] = ref
	return ref, nil
}

func (r *Registry) buildAndPush(ctx context.Context, root, pkg, tag string) (string, error) {
	work, err := os.MkdirTemp("", "plumb-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	idx, err := imagebuild.Build(ctx, imagebuild.Options{
		Dir:     root,
		WorkDir: work,
		Version: tag,
		Commit:  "local",
		Source:  "https://plumb.dev/local",
		// A fixed time: an unchanged program gives the same digest, so
		// the node's image store keeps it across environments.
		Created:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
	}, pkg)
	if err != nil {
		return "", err
	}
	return r.Push(ctx, filepath.Base(filepath.Clean(pkg)), tag, idx)
}

// Close stops serving.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	<-r.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
