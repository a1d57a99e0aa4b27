package render

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"sigs.k8s.io/kustomize/api/resmap"
)

// DefaultSharedInputBytes bounds what SharedBuilds keeps, counted in the
// bytes the kept builds read from their trees: kustomize holds some ten
// times that in memory, so the default keeps a few tens of MiB at most.
const DefaultSharedInputBytes int64 = 4 << 20

// sharedBuildsMax bounds the builds kept whatever their size: sharing pays
// for the few paths many Kustomizations render, and a fleet where each
// renders its own folder would otherwise keep a copy of every render for
// nothing.
const sharedBuildsMax = 64

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
// A build is kept the second time its key is built (the first time it may
// be the only one). Only builds that read at most a sixteenth of the
// budget are kept, at most
// sharedBuildsMax of them, least recently used first out; a failed build
// is never kept.
type SharedBuilds struct {
	maxInput int64

	mu      sync.Mutex
	input   int64
	order   *list.List // of *sharedBuild, least recently used first
	entries map[string]*list.Element
	// built holds the keys built once and not kept: a build is kept when
	// its key comes a second time, so a fleet where every Kustomization
	// renders its own folder copies nothing.
	built map[[sha256.Size]byte]struct{}
}

// sharedBuildsSeen bounds built; when full it starts again.
const sharedBuildsSeen = 4096

type sharedBuild struct {
	key    string
	resMap resmap.ResMap
	input  int64
}

// NewSharedBuilds keeps builds that read at most maxInputBytes in all
// (DefaultSharedInputBytes when zero or less).
func NewSharedBuilds(maxInputBytes int64) *SharedBuilds {
	if maxInputBytes <= 0 {
		maxInputBytes = DefaultSharedInputBytes
	}
	return &SharedBuilds{maxInput: maxInputBytes, order: list.New(), entries: map[string]*list.Element{},
		built: map[[sha256.Size]byte]struct{}{}}
}

// get returns a copy of the build kept under key, or nil.
func (s *SharedBuilds) get(key string) resmap.ResMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil
	}
	s.order.MoveToBack(e)
	return e.Value.(*sharedBuild).resMap.DeepCopy()
}

// put keeps a copy of m, which read input bytes, under key.
func (s *SharedBuilds) put(key string, m resmap.ResMap, input int64) {
	if input > s.maxInput/16 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		return // a concurrent build of the same key came first
	}
	sum := sha256.Sum256([]byte(key))
	if _, again := s.built[sum]; !again {
		if len(s.built) >= sharedBuildsSeen {
			clear(s.built)
		}
		s.built[sum] = struct{}{}
		return
	}
	delete(s.built, sum)
	s.entries[key] = s.order.PushBack(&sharedBuild{key: key, resMap: m.DeepCopy(), input: input})
	s.input += input
	for s.input > s.maxInput || len(s.entries) > sharedBuildsMax {
		old := s.order.Remove(s.order.Front()).(*sharedBuild)
		delete(s.entries, old.key)
		s.input -= old.input
	}
}

// Len is the number of builds kept.
func (s *SharedBuilds) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
