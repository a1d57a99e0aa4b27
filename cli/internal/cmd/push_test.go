package cmd

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"plumb.dev/pkg/ociartifact"
)

// push artifact writes Flux's format to a real registry: an OCI manifest
// with Flux's config and content media types, the source and revision
// annotations, and one layer holding the folder without .git or the
// ignored paths. Behind basic auth it needs --creds.
func TestPushArtifactWritesFluxsFormat(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // never the user's credentials
	host := startRegistry(t, "robot", "s3cret")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"deploy/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"deploy/notes.md": "internal\n",
		".git/HEAD":       "ref: refs/heads/main\n",
	})
	url := "oci://" + host + "/manifests/app:v1"
	args := []string{"push", "artifact", url, "--path=" + dir,
		"--source=https://github.com/example/app", "--revision=main@sha1:0123456789abcdef0123456789abcdef01234567",
		"--ignore-paths=*.md", "--insecure-registry", "--reproducible"}

	if r := plumb(args...); r.code != ExitError || !strings.Contains(r.errOut, "UNAUTHORIZED") && !strings.Contains(r.errOut, "401") {
		t.Fatalf("a push without credentials must be refused:\n%s", r)
	}
	r := plumb(append(args, "--creds=robot:s3cret")...)
	if r.code != ExitOK {
		t.Fatalf("push: %s", r)
	}
	if !strings.Contains(r.out, host+"/manifests/app@sha256:") {
		t.Fatalf("the output names no digest: %s", r)
	}

	ref, err := name.ParseReference(strings.TrimPrefix(url, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: "robot", Password: "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != ociartifact.ConfigMediaType {
		t.Errorf("manifest %s with config %s, want %s with %s", m.MediaType, m.Config.MediaType, types.OCIManifestSchema1, ociartifact.ConfigMediaType)
	}
	want := map[string]string{
		ociartifact.SourceAnnotation:   "https://github.com/example/app",
		ociartifact.RevisionAnnotation: "main@sha1:0123456789abcdef0123456789abcdef01234567",
		ociartifact.CreatedAnnotation:  "1970-01-01T00:00:00Z",
	}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != ociartifact.ContentMediaType {
		t.Fatalf("layers %+v, want one of %s", m.Layers, ociartifact.ContentMediaType)
	}
	layer, err := img.LayerByDigest(m.Layers[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := untarNames(t, rc)
	if len(got) != 1 || got[0] != "deploy/cm.yaml" {
		t.Errorf("the layer holds %v, want only deploy/cm.yaml", got)
	}
}

// A URL without a tag, and a --path that is not a folder, are refused
// before anything is pushed.
func TestPushArtifactRefusesBadArguments(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(file), map[string]string{"file": "x"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"push", "artifact", "ghcr.io/org/app:v1", "--path=" + t.TempDir()}, "does not start with oci://"},
		{[]string{"push", "artifact", "oci://ghcr.io/org/app:v1", "--path=" + file}, "is not a folder"},
		{[]string{"push", "artifact", "oci://ghcr.io/org/app:v1"}, `required flag(s) "path" not set`},
	} {
		r := plumb(c.args...)
		if r.code != ExitError || !strings.Contains(r.errOut, c.want) {
			t.Errorf("%v: want exit %d with %q, got %s", c.args, ExitError, c.want, r)
		}
	}
}

// startRegistry runs go-containerregistry's registry on 127.0.0.1 behind
// basic auth.
func startRegistry(t *testing.T, user, password string) string {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), fs.FileMode(0o644)); err != nil {
			t.Fatal(err)
		}
	}
}

func untarNames(t *testing.T, r io.Reader) []string {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
