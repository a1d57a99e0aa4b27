package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// announcements remembers, per object, the render (digest and revision)
// whose Rendered event was sent last, so a reconcile that runs on a cached
// copy older than its own status write does not announce it twice. Both
// reconcilers use it.
type announcements struct {
	mu   sync.Mutex
	last map[types.NamespacedName]string
}

// first records render as the one announced for key and reports whether it
// was not already.
func (a *announcements) first(key types.NamespacedName, render string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]string{}
	}
	if a.last[key] == render {
		return false
	}
	a.last[key] = render
	return true
}

// forget drops what is remembered for key.
func (a *announcements) forget(key types.NamespacedName) {
	a.mu.Lock()
	delete(a.last, key)
	a.mu.Unlock()
}
