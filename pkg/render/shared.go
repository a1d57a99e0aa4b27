package render

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"sigs.k8s.io/kustomize/api/resource"
)

// DefaultSharedOutputBytes bounds what SharedBuilds keeps, counted in the
// rendered output of the kept builds. kustomize's objects in memory cost
// some ten to twenty times their YAML, so the default keeps a few tens of
// MiB at most; it is the output that is counted, never the input, because
// one patch read once may change every object of a build.
const DefaultSharedOutputBytes int64 = 2 << 20

// sharedBuildsMax bounds the builds kept whatever their size: sharing pays
// for the few paths many Kustomizations render.
const sharedBuildsMax = 64

// sharedBuildsSeen bounds the keys remembered as built once; when full it
// starts again.
const sharedBuildsSeen = 4096

// SharedBuilds keeps kustomize's output for a tree and an overlay, so that
// Kustomizations rendering one path of one revision with the same spec
// fields — differing only in their postBuild variables or commonMetadata,
// as a fleet's do — run kustomize once. Build uses it through
// Options.Shared only for a tree that never changes (render-controller's
// shared source trees, one folder per digest) and never with a Decryptor:
// a build with keys holds plaintext another Kustomization must not get.
// Substitution, commonMetadata and every check after kustomize run for
// each build, on a copy.
//
// A build is kept the second time its key is built (the first may be the
// only one, and a fleet where every Kustomization renders its own folder
// then copies nothing), only once the whole Build has succeeded (a failing
// build is retried, not kept), and only when its output is at most a
// sixteenth of the budget; at most sharedBuildsMax are kept, least
// recently used first out.
type SharedBuilds struct {
	maxOutput int64

	mu      sync.Mutex
	output  int64
	order   *list.List // of *sharedBuild, least recently used first
	entries map[string]*list.Element
	built   map[[sha256.Size]byte]struct{}
}

type sharedBuild struct {
	key       string
	resources []*resource.Resource
	output    int64
}

// NewSharedBuilds keeps builds whose outputs are at most maxOutputBytes in
// all (DefaultSharedOutputBytes when zero or less).
func NewSharedBuilds(maxOutputBytes int64) *SharedBuilds {
	if maxOutputBytes <= 0 {
		maxOutputBytes = DefaultSharedOutputBytes
	}
	return &SharedBuilds{maxOutput: maxOutputBytes, order: list.New(), entries: map[string]*list.Element{},
		built: map[[sha256.Size]byte]struct{}{}}
}

// get returns a copy of the build kept under key, or nil.
func (s *SharedBuilds) get(key string) []*resource.Resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil
	}
	s.order.MoveToBack(e)
	return copyResources(e.Value.(*sharedBuild).resources)
}

// copyResources deep-copies a build's resources (finish changes them).
func copyResources(rs []*resource.Resource) []*resource.Resource {
	out := make([]*resource.Resource, len(rs))
	for i, r := range rs {
		out[i] = r.DeepCopy()
	}
	return out
}

// builtBefore reports whether key was built before (and remembers it
// was, when not).
func (s *SharedBuilds) builtBefore(key string) bool {
	sum := sha256.Sum256([]byte(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, again := s.built[sum]; again {
		// Forgotten again: a build put refuses as too large is then
		// copied every other time, not every time.
		delete(s.built, sum)
		return true
	}
	if len(s.built) >= sharedBuildsSeen {
		clear(s.built)
	}
	s.built[sum] = struct{}{}
	return false
}

// put keeps rs, a copy no one else holds, whose Build wrote outputBytes.
func (s *SharedBuilds) put(key string, rs []*resource.Resource, outputBytes int64) {
	if outputBytes > s.maxOutput/16 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		return // a concurrent build of the same key came first
	}
	s.entries[key] = s.order.PushBack(&sharedBuild{key: key, resources: rs, output: outputBytes})
	s.output += outputBytes
	for s.output > s.maxOutput || len(s.entries) > sharedBuildsMax {
		old := s.order.Remove(s.order.Front()).(*sharedBuild)
		delete(s.entries, old.key)
		s.output -= old.output
	}
}
