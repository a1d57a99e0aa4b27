package controller

// Test-only access to what a running controller keeps in memory.

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/plan"
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

// preparedOf returns the prepared objects and the plan the cache keeps
// for key, nil when it keeps none. They are the cache's own, shared with
// every run that takes them: a test reads them, never changes them.
func (c *manifestCache) preparedOf(key types.NamespacedName) ([]*unstructured.Unstructured, *plan.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, ok := c.m[key]
	if !ok {
		return nil, nil
	}
	return cached.prepared, cached.plan
}
