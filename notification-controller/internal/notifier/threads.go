package notifier

import (
	"sync"

	"k8s.io/utils/lru"
)

// Bounds of the thread memory: the Providers that thread at once, and the
// objects each remembers. The least recently used goes first; its next
// message starts a new thread, which is all that is lost.
const (
	maxThreadProviders    = 256
	maxThreadsPerProvider = 1000
)

// ThreadStore is the dispatcher's memory of Slack threads, one Threads per
// Provider. It lives in memory only: after notification-controller
// restarts, each object's next message starts a new thread.
type ThreadStore struct {
	mu        sync.Mutex // one Threads per Provider, even when two ask at once
	providers *lru.Cache
}

// NewThreadStore returns an empty store.
func NewThreadStore() *ThreadStore {
	return &ThreadStore{providers: lru.New(maxThreadProviders)}
}

// For returns the threads of the Provider with this UID, made on first use.
// A Provider deleted and created again has a new UID, and new threads.
func (s *ThreadStore) For(providerUID string) *Threads {
	if s == nil {
		return nil // no store: every message goes to the channel
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.providers.Get(providerUID); ok {
		return t.(*Threads)
	}
	t := &Threads{objects: lru.New(maxThreadsPerProvider)}
	s.providers.Add(providerUID, t)
	return t
}

// Threads maps an object (and the channel it is posted in) to the
// timestamp of the message that started its thread. Safe for concurrent
// use.
type Threads struct{ objects *lru.Cache }

func (t *Threads) get(key string) (string, bool) {
	if t == nil {
		return "", false
	}
	ts, ok := t.objects.Get(key)
	if !ok {
		return "", false
	}
	return ts.(string), true
}

func (t *Threads) put(key, ts string) {
	if t != nil {
		t.objects.Add(key, ts)
	}
}

func (t *Threads) forget(key string) {
	if t != nil {
		t.objects.Remove(key)
	}
}
