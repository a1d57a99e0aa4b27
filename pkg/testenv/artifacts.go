package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ArtifactServer stands in for render-controller's (or
// source-controller's) artifact server: it serves the files it was given
// and answers 404 for any other path, as a server does for an artifact it
// garbage-collected.
type ArtifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

// NewArtifactServer starts an ArtifactServer on 127.0.0.1, closed when the
// test ends.
func NewArtifactServer(t testing.TB) *ArtifactServer {
	s := StartArtifactServer()
	t.Cleanup(s.Close)
	return s
}

// StartArtifactServer starts an ArtifactServer on 127.0.0.1 that the
// caller closes: for a fixture that outlives one test.
func StartArtifactServer() *ArtifactServer {
	s := &ArtifactServer{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	return s
}

// Serve publishes data at path and returns the artifact describing it, as
// a status holds it.
func (s *ArtifactServer) Serve(path, revision string, data []byte) *meta.Artifact {
	s.mu.Lock()
	s.files[path] = data
	s.mu.Unlock()
	size := int64(len(data))
	return &meta.Artifact{Path: strings.TrimPrefix(path, "/"), URL: s.URL + path, Revision: revision,
		Digest: Digest(data), Size: &size, LastUpdateTime: metav1.Now()}
}

// ServeRendered publishes data where render-controller serves a render of
// the object kind namespace/name, /<kind>/<namespace>/<name>/<hex>.yaml
// (the only shape pkg/inspect downloads), and returns its artifact.
func (s *ArtifactServer) ServeRendered(kind, namespace, name, revision string, data []byte) *meta.Artifact {
	return s.Serve("/"+strings.ToLower(kind)+"/"+namespace+"/"+name+"/"+strings.TrimPrefix(Digest(data), "sha256:")+".yaml", revision, data)
}

// Digest is data's digest as an artifact states it: sha256:<hex>.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
