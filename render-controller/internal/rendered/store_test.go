package rendered

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
)

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestStoreKeepsTheSameRender: the same bytes from the same revision keep
// the artifact (and its lastUpdateTime); new metadata is taken without a
// new file; new bytes or a new revision are a new artifact.
func TestStoreKeepsTheSameRender(t *testing.T) {
	storage, err := artifact.NewStorage(t.TempDir(), "localhost:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Storage: storage, Kind: "HelmRelease"}
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	ctx := context.Background()
	m := []byte("kind: ConfigMap\n")
	first, isNew, err := s.Store(ctx, key, nil, Render{Manifests: m, Digest: digest(m), Revision: "1.0.0", Metadata: map[string]string{"a": "1"}})
	if err != nil || !isNew || first.Revision != "1.0.0" || first.Metadata["a"] != "1" {
		t.Fatalf("first store: %+v, new %t, %v", first, isNew, err)
	}
	if want := "helmrelease/ns/app/" + hexOf(digest(m)) + ".yaml"; first.Path != want {
		t.Errorf("path %q, want %q", first.Path, want)
	}
	same, isNew, err := s.Store(ctx, key, first, Render{Manifests: m, Digest: digest(m), Revision: "1.0.0", Metadata: map[string]string{"a": "1"}})
	if err != nil || isNew || same != first {
		t.Fatalf("same render: %+v, new %t, %v; want the artifact kept", same, isNew, err)
	}
	md, isNew, err := s.Store(ctx, key, first, Render{Manifests: m, Digest: digest(m), Revision: "1.0.0", Metadata: map[string]string{"a": "2"}})
	if err != nil || isNew || md.Metadata["a"] != "2" || !md.LastUpdateTime.Equal(&first.LastUpdateTime) || first.Metadata["a"] != "1" {
		t.Fatalf("new metadata: %+v, new %t, %v; want a copy with the metadata, same file", md, isNew, err)
	}
	next, isNew, err := s.Store(ctx, key, first, Render{Manifests: m, Digest: digest(m), Revision: "1.0.1"})
	if err != nil || !isNew || next.Revision != "1.0.1" || next.Metadata != nil {
		t.Fatalf("new revision: %+v, new %t, %v; want a new artifact", next, isNew, err)
	}
}

// TestATornRenderIsStoredAgainUnderItsName: render-controller's storage
// does not sync a render to the disk (artifact.Storage.Rebuilt), so a
// machine that stops before the kernel wrote it out can leave the file
// short or empty. The next render of the same bytes notices it and writes
// it again under the same content-addressed name, and what it serves
// verifies.
func TestATornRenderIsStoredAgainUnderItsName(t *testing.T) {
	storage, err := artifact.NewStorage(t.TempDir(), "localhost:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	storage.Rebuilt = true
	s := &Store{Storage: storage, Kind: "Kustomization"}
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	ctx := context.Background()
	m := []byte("kind: ConfigMap\nmetadata:\n  name: a\n")
	r := Render{Manifests: m, Digest: digest(m), Revision: "main@sha1:1"}
	first, _, err := s.Store(ctx, key, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(storage.LocalPath(first.Path), m[:4], 0o644); err != nil {
		t.Fatal(err)
	}
	if s.Intact(ctx, first) {
		t.Fatal("a torn render is reported intact")
	}
	again, isNew, err := s.Store(ctx, key, first, r)
	if err != nil || !isNew {
		t.Fatalf("store after the tear: new %t, %v; want the file written again", isNew, err)
	}
	if again.Path != first.Path || again.Digest != first.Digest {
		t.Errorf("stored again as %s (%s), want %s (%s)", again.Path, again.Digest, first.Path, first.Digest)
	}
	if err := storage.Verify(again); err != nil {
		t.Errorf("the render stored again does not verify: %v", err)
	}
}

func TestAnnouncementsOncePerRender(t *testing.T) {
	var a announcements
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	if !a.first(key, "d@1") || a.first(key, "d@1") {
		t.Fatal("a render is announced once")
	}
	a.first(key, "") // a failure
	if !a.first(key, "d@1") {
		t.Fatal("after a failure the same render is news again")
	}
	a.forget(key)
	if !a.first(key, "d@1") {
		t.Fatal("a forgotten object's render is news")
	}
}

// TestStoreKeepsTheRendersAsked: a render named in Keep (a HelmRelease's
// deployed release, which a rollback downloads again) outlives the
// retention, while the other old renders go.
func TestStoreKeepsTheRendersAsked(t *testing.T) {
	storage, err := artifact.NewStorage(t.TempDir(), "localhost:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Storage: storage, Kind: "HelmRelease"}
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	ctx := context.Background()
	var prev *meta.Artifact
	var stored []*meta.Artifact
	deployed := []byte("kind: ConfigMap\nmetadata: {name: v1}\n")
	for i, m := range [][]byte{deployed, []byte("kind: ConfigMap\nmetadata: {name: v2}\n"), []byte("kind: ConfigMap\nmetadata: {name: v3}\n")} {
		a, _, err := s.Store(ctx, key, prev, Render{Manifests: m, Digest: digest(m), Revision: "1.0.0", Keep: []string{digest(deployed)}})
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		prev = a
		stored = append(stored, a)
	}
	if err := storage.Verify(stored[0]); err != nil {
		t.Errorf("the kept render is gone: %v", err)
	}
	if err := storage.Verify(stored[1]); err == nil {
		t.Error("a render neither kept nor within the retention is still there")
	}
	if err := storage.Verify(stored[2]); err != nil {
		t.Errorf("the newest render is gone: %v", err)
	}
}
