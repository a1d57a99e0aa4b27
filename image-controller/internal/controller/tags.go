package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Scan is one repository's last successful scan: its tags after the
// exclusion list, and their revision.
type Scan struct {
	Image    string
	Revision string
	Tags     []string
}

// Tags holds the last scan of every ImageRepository in memory, where
// ImagePolicies read it; each is bounded by the scan's tag limit
// (--max-tags). Nothing is kept across restarts: a new process scans
// every repository once as it starts, and a policy waits for that scan
// (DependencyNotReady) rather than choosing from a list it does not have.
type Tags struct {
	mu    sync.RWMutex
	scans map[types.NamespacedName]Scan
}

// NewTags returns an empty store.
func NewTags() *Tags { return &Tags{scans: map[types.NamespacedName]Scan{}} }

// Set records repo's scan.
func (t *Tags) Set(repo types.NamespacedName, s Scan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scans[repo] = s
}

// Get returns repo's last scan.
func (t *Tags) Get(repo types.NamespacedName) (Scan, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.scans[repo]
	return s, ok
}

// Forget drops repo's scan, once the repository is deleted.
func (t *Tags) Forget(repo types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.scans, repo)
}
