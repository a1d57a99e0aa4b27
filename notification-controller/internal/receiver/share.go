package receiver

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultMaxShare is --receiver-max-share: the part of
// --receiver-max-concurrent that one Receiver, or all Receivers of one
// namespace, may hold at once.
const DefaultMaxShare = 0.25

// shares counts the calls in flight per Receiver and per namespace, so
// that one tenant's Receiver — flooded, or fed slow bodies on purpose —
// cannot hold every slot of the server and keep the other tenants'
// webhooks out. The global cap (Server.MaxConcurrent) still bounds the
// whole.
type shares struct {
	mu          sync.Mutex
	max         int
	byReceiver  map[types.NamespacedName]int
	byNamespace map[string]int
}

func newShares(maxConcurrent int, share float64) *shares {
	return &shares{
		max:         max(1, int(float64(maxConcurrent)*share)),
		byReceiver:  map[types.NamespacedName]int{},
		byNamespace: map[string]int{},
	}
}

// acquire takes a slot of key's share and of its namespace's; ok is false
// when either is full. release gives them back.
func (s *shares) acquire(key types.NamespacedName) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byReceiver[key] >= s.max || s.byNamespace[key.Namespace] >= s.max {
		return nil, false
	}
	s.byReceiver[key]++
	s.byNamespace[key.Namespace]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.byReceiver[key]--; s.byReceiver[key] == 0 {
			delete(s.byReceiver, key)
		}
		if s.byNamespace[key.Namespace]--; s.byNamespace[key.Namespace] == 0 {
			delete(s.byNamespace, key.Namespace)
		}
	}, true
}
