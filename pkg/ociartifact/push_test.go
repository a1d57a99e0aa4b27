package ociartifact

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// The same folder with the same creation time is the same manifest
// digest, wherever and whenever it is packed; another content is another
// digest.
func TestPushIsReproducible(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	push := func(tag, body string) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "deploy"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "deploy", "cm.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		ref, err := Push(context.Background(), "oci://"+host+"/app:"+tag, dir, PushOptions{Source: "https://git.example/app", Revision: "main@sha1:0123", Created: created, Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ref, host+"/app@sha256:") {
			t.Fatalf("pushed %q, want %s/app@sha256:…", ref, host)
		}
		return ref
	}
	a, b, c := push("a", "one\n"), push("b", "one\n"), push("c", "two\n")
	if a != b {
		t.Errorf("the same content pushed twice gave %s and %s", a, b)
	}
	if a == c {
		t.Errorf("another content gave the same digest %s", a)
	}
	// A tag is required, as for `flux push artifact`: what is pushed is
	// named, never latest by accident.
	if _, err := Push(context.Background(), "oci://"+host+"/app", t.TempDir(), PushOptions{Insecure: true}); err == nil ||
		!strings.Contains(err.Error(), "is not oci://<host>/<repository>:<tag>") {
		t.Errorf("a URL without a tag must be refused, got %v", err)
	}
}
