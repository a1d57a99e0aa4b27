package controller

// Test-only access to what a running controller keeps in memory.

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// waiting says whether key's wait is held.
func (w *renderWaits) waiting(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.since[key]
	return ok
}

// setGrace changes the grace; 0 is defaultRenderGrace.
func (w *renderWaits) setGrace(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.grace = d
}

// kept says what the manifest cache holds of key: the artifact's bytes,
// and its prepared objects and plan.
func (c *manifestCache) kept(key types.NamespacedName) (bytes, prepared bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok {
		return false, false
	}
	return cached.data != nil, cached.plan != nil || cached.prepared != nil
}
