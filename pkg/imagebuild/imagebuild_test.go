package imagebuild

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// hello is the program the tests build: it compiles in seconds for both
// platforms, where a controller would take minutes of CPU the first time.
const hello = "./testdata/hello"

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
	// The build host's platform, whose image Check runs.
	host = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
)

func options(t *testing.T, platforms ...v1.Platform) Options {
	return Options{
		Dir:       ".",
		WorkDir:   t.TempDir(),
		Version:   "v1.2.3",
		Commit:    "0123456789abcdef0123456789abcdef01234567",
		Source:    "https://example.com/plumb",
		Created:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Platforms: platforms,
	}
}

func build(t *testing.T, o Options) v1.ImageIndex {
	t.Helper()
	idx, err := Build(context.Background(), o, hello)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTwoBuildsOfOneCommitGiveTheSameDigests(t *testing.T) {
	first := build(t, options(t, amd64, arm64))
	// Another work folder, as another clone would have; Go's build cache
	// makes the second compile cheap but not the layers, which are made anew.
	second := build(t, options(t, amd64, arm64))
	if a, b := digest(t, first), digest(t, second); a != b {
		t.Fatalf("two builds of one commit: index %s and %s", a, b)
	}

	m, err := first.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index: %s with %d manifests, want an OCI index of 2", m.MediaType, len(m.Manifests))
	}
	for i, want := range []v1.Platform{amd64, arm64} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.OS != want.OS || d.Platform.Architecture != want.Architecture || d.MediaType != types.OCIManifestSchema1 {
			t.Fatalf("manifest %d: %s for %v, want an OCI manifest for %s", i, d.MediaType, d.Platform, platformString(want))
		}
	}

	// What `make images` writes without a registry reads back as the same index.
	dir := filepath.Join(t.TempDir(), "hello")
	if err := WriteLayout(dir, first, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digest(t, first), digest(t, back); a != b {
		t.Fatalf("layout holds %s, built %s", b, a)
	}

	// Both platforms' images pass Check: the host's runs, the other's is
	// a static ELF file for its architecture.
	if err := Check(context.Background(), first, "hello", t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestAPushedImageRunsAsNonrootWithoutAShellAndStartsWithHelp(t *testing.T) {
	srv := httptest.NewServer(quietRegistry())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	o := options(t, amd64, arm64)
	idx := build(t, o)
	ref, err := Reference(strings.TrimPrefix(srv.URL, "http://")+"/plumb-dev", "hello", o.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, ref, idx); err != nil {
		t.Fatal(err)
	}

	pulled, err := Pull(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digest(t, idx), digest(t, pulled); a != b {
		t.Fatalf("the registry holds %s, pushed %s", b, a)
	}
	img, err := pulled.Image(imageDigest(t, pulled, host))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/hello" || len(cf.Config.Cmd) != 0 {
		t.Fatalf("config: user %q, entrypoint %q, cmd %q; want 65532:65532 and /hello alone", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	wantLabels := map[string]string{
		LabelTitle: "hello", LabelVersion: o.Version, LabelRevision: o.Commit,
		LabelSource: o.Source, LabelCreated: "2026-01-02T03:04:05Z",
	}
	for k, v := range wantLabels {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}
	if !cf.Created.Equal(o.Created) {
		t.Errorf("created %s, want the commit's time %s", cf.Created, o.Created)
	}

	work := t.TempDir()
	if err := Check(ctx, pulled, "hello", work); err != nil {
		t.Fatal(err)
	}
	// The binary Check ran from the layer carries the version it was
	// linked with.
	out, err := exec.Command(filepath.Join(work, "check-linux-"+runtime.GOARCH, "hello")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v1.2.3 (commit 0123456789ab)") {
		t.Fatalf("the extracted binary said %q (%v), want its linked version", out, err)
	}
}

func imageDigest(t *testing.T, idx v1.ImageIndex, p v1.Platform) v1.Hash {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture {
			return d.Digest
		}
	}
	t.Fatalf("no image for %s", platformString(p))
	return v1.Hash{}
}

func TestCheckRefusesAShellARootUserAndAnotherEntrypoint(t *testing.T) {
	idx := build(t, options(t, host))
	img, err := idx.Image(imageDigest(t, idx, host))
	if err != nil {
		t.Fatal(err)
	}
	withShell, err := layer([]entry{dir("bin", 0o755), file("bin/sh", 0o755, []byte("#!/bin/false\n"))}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	shelled, err := mutate.AppendLayers(img, withShell)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	asRoot := cf.DeepCopy()
	asRoot.Config.User = "0"
	rooted, err := mutate.ConfigFile(img, asRoot)
	if err != nil {
		t.Fatal(err)
	}
	// Debian's true is linked against its C library, which no image holds.
	dynamic, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	withDynamic, err := layer([]entry{file("hello", 0o755, dynamic)}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	linked, err := mutate.AppendLayers(img, withDynamic)
	if err != nil {
		t.Fatal(err)
	}
	other := cf.DeepCopy()
	other.Config.Entrypoint = []string{"/bin/sh", "-c", "/hello"}
	wrapped, err := mutate.ConfigFile(img, other)
	if err != nil {
		t.Fatal(err)
	}
	// The host's image listed as the other platform's: its binary could
	// never start there.
	elsewhere := arm64
	if host.Architecture == arm64.Architecture {
		elsewhere = amd64
	}
	for name, tc := range map[string]struct {
		img      v1.Image
		platform v1.Platform
		want     string
	}{
		"shell":        {shelled, host, "the image holds a shell: /bin/sh"},
		"root":         {rooted, host, `user "0", want "65532:65532"`},
		"entrypoint":   {wrapped, host, "entrypoint"},
		"dynamic":      {linked, host, "linked dynamically"},
		"architecture": {img, elsewhere, "the entrypoint is built for"},
	} {
		t.Run(name, func(t *testing.T) {
			one := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: tc.img, Descriptor: v1.Descriptor{Platform: &tc.platform}})
			err := Check(context.Background(), one, "hello", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// roundTripFunc counts the requests let through.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPlainHTTPIsRefusedExceptToLoopback(t *testing.T) {
	passed := 0
	tr := httpsOnly{next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		passed++
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})}
	for url, allowed := range map[string]bool{
		"http://10.0.0.5:5000/v2/":       false,
		"http://registry.local/v2/":      false,
		"http://ghcr.io/v2/":             false,
		"https://10.0.0.5:5000/v2/":      true,
		"http://127.0.0.1:5000/v2/":      true,
		"http://localhost:5000/v2/":      true,
		"http://[::1]:5000/v2/":          true,
		"http://127.0.0.1.nip.io:80/v2/": false,
	} {
		before := passed
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		_, err := tr.RoundTrip(req)
		if allowed && (err != nil || passed != before+1) {
			t.Errorf("%s: refused (%v), want it let through", url, err)
		}
		if !allowed && (err == nil || !strings.Contains(err.Error(), "refusing plain HTTP") || passed != before) {
			t.Errorf("%s: %v, want it refused before any connection", url, err)
		}
	}
}

// A registry that speaks only HTTP at a private address: go-containerregistry
// alone pushes to it over HTTP (it falls back for RFC 1918 addresses), which
// the test shows first; Push must refuse. The address is routed to a local
// server, so no packet leaves the machine.
func TestPushRefusesAPrivateRegistryWithoutTLS(t *testing.T) {
	srv := httptest.NewServer(quietRegistry())
	t.Cleanup(srv.Close)
	local := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	t.Cleanup(local.CloseIdleConnections)
	old := transport
	transport = local
	t.Cleanup(func() { transport = old })

	ref, err := Reference("10.0.0.5:5000/plumb-dev", "empty", "v1")
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithTransport(local)); err != nil {
		t.Fatalf("without Push's rule the HTTP push should go through, so the refusal below means something: %v", err)
	}
	err = Push(ctx, ref, idx)
	if err == nil || !strings.Contains(err.Error(), "refusing plain HTTP") {
		t.Fatalf("Push over HTTP to 10.0.0.5 = %v, want it refused", err)
	}
}

func TestTheCABundleHoldsTheUnconstrainedRoots(t *testing.T) {
	pem := caCertificates()
	n := strings.Count(string(pem), "-----BEGIN CERTIFICATE-----")
	unconstrained := 0
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			unconstrained++
		}
	}
	if n != unconstrained || n < 100 {
		t.Fatalf("%d certificates, want the %d of Mozilla's roots without a constraint", n, unconstrained)
	}
}

func TestOnlyLinuxAmd64AndArm64AreBuilt(t *testing.T) {
	for _, s := range []string{"linux/amd64", "linux/arm64"} {
		if _, err := ParsePlatform(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"linux/arm/v7", "windows/amd64", "linux", "linux/arm64/v8"} {
		if _, err := ParsePlatform(s); err == nil {
			t.Errorf("%s accepted, want refused", s)
		}
	}
}

func quietRegistry() http.Handler { return registry.New(registry.Logger(log.New(io.Discard, "", 0))) }
