package imagebuild

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Reference is the tag an image is pushed as: <registry>/<program>:<tag>,
// where registry is a host with an optional path (IMAGE_REGISTRY). Plain
// HTTP is allowed to a loopback registry only.
func Reference(registry, program, tag string) (name.Tag, error) {
	ref := registry + "/" + program + ":" + tag
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if loopback(t.RegistryStr()) {
		return name.NewTag(ref, name.StrictValidation, name.Insecure)
	}
	return t, nil
}

// loopback says whether hostport is this machine: 127.0.0.0/8, ::1 or
// localhost, with or without a port.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpsOnly refuses every plain-HTTP request to a host that is not a
// loopback address. go-containerregistry falls back to HTTP on its own for
// RFC 1918 addresses and *.local names (name.Registry.Scheme); an image
// pushed so could be replaced on the way, so that fallback is cut here
// whatever the reference says.
type httpsOnly struct{ next http.RoundTripper }

func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !loopback(req.URL.Host) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: only a loopback registry (127.0.0.1, localhost) may be reached without TLS", req.URL.Host)
	}
	return t.next.RoundTrip(req)
}

// transport carries every registry call; the tests route it to a local
// server.
var transport http.RoundTripper = remote.DefaultTransport

// remoteOptions are the options of every registry call: the caller's
// context, credentials from the Docker config (~/.docker/config.json, as
// `docker login` or `crane auth login` leave them) and the HTTPS rule.
func remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithTransport(httpsOnly{next: transport}),
	}
}

// Push writes idx to the registry as ref, blobs the registry already has
// (the shared base layer) skipped.
func Push(ctx context.Context, ref name.Tag, idx v1.ImageIndex) error {
	if err := remote.WriteIndex(ref, idx, remoteOptions(ctx)...); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// Pull reads the index ref back from its registry, under the same rules.
func Pull(ctx context.Context, ref name.Reference) (v1.ImageIndex, error) {
	idx, err := remote.Index(ref, remoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	return idx, nil
}

// WriteLayout replaces dir with an OCI image layout whose index.json
// names idx, annotated with tag (org.opencontainers.image.ref.name), so
// `crane push <dir> <ref>` or `skopeo copy oci:<dir> …` can publish it later.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
}

// ReadLayout reads back the index WriteLayout wrote in dir.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: index.json names %d entries, want the one image index", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}
