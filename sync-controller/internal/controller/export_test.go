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
