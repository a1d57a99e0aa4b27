package rendered

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"k8s.io/apimachinery/pkg/types"

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
