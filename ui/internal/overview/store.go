package overview

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/ui/internal/kinds"
	"plumb.dev/ui/internal/live"
)

// Store holds the row of every object of the overview's kinds (kinds.All), sorted by kind,
// namespace and name.
type Store struct {
	// OnChange, when set before the first Set, is told of every object
	// added, changed or deleted.
	OnChange func(live.Change)

	mu     sync.RWMutex
	rows   map[Ref]*Row
	sorted []*Row // nil when rows changed since it was built
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{rows: map[Ref]*Row{}} }

// Set stores obj's row (an object of another kind is ignored).
func (s *Store) Set(obj client.Object) {
	r := rowOf(obj)
	if r == nil {
		return
	}
	s.update(r.ref(), r)
}

// Delete forgets obj's row.
func (s *Store) Delete(obj client.Object) {
	if r := rowOf(obj); r != nil {
		s.update(r.ref(), nil)
	}
}

// update stores or, when r is nil, forgets the row of key, and tells
// OnChange.
func (s *Store) update(key Ref, r *Row) {
	s.mu.Lock()
	_, had := s.rows[key]
	if r != nil {
		s.rows[key] = r
	} else {
		delete(s.rows, key)
	}
	s.sorted = nil
	s.mu.Unlock()
	reason := live.Updated
	switch {
	case r == nil:
		reason = live.Deleted
	case !had:
		reason = live.Added
	}
	s.changed(key, reason)
}

func (s *Store) changed(key Ref, reason string) {
	if s.OnChange != nil {
		s.OnChange(live.Change{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Reason: reason})
	}
}

// Rows returns every row, sorted by kind, namespace and name. The slice is
// shared: callers must not change it or its rows.
func (s *Store) Rows() []*Row {
	s.mu.RLock()
	sorted := s.sorted
	s.mu.RUnlock()
	if sorted != nil {
		return sorted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sorted == nil {
		s.sorted = make([]*Row, 0, len(s.rows))
		for _, r := range s.rows {
			s.sorted = append(s.sorted, r)
		}
		slices.SortFunc(s.sorted, func(a, b *Row) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
	}
	return s.sorted
}

// syncTimeout bounds the wait for the informers' first lists: an identity
// that may not list a kind is retried by its informer forever, silently.
const syncTimeout = 2 * time.Minute

// Watch fills store from informers on the overview's kinds (kinds.All), made with cfg (the
// UI's own identity, which may list and watch them in every namespace),
// and keeps it up to date until ctx ends. It returns once every informer
// has listed, or with the error that kept one from it.
func Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, store *Store) error {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return err
	}
	for _, k := range kinds.All {
		inf, err := c.GetInformer(ctx, k.New(), cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %s: %w", k.GVK.Kind, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if o, ok := obj.(client.Object); ok {
					store.Set(o)
				}
			},
			UpdateFunc: func(old, obj any) {
				o, ok := obj.(client.Object)
				if before, was := old.(client.Object); ok && (!was || before.GetResourceVersion() != o.GetResourceVersion()) {
					store.Set(o)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if o, ok := obj.(client.Object); ok {
					store.Delete(o)
				}
			},
		}); err != nil {
			return err
		}
	}
	errs := make(chan error, 1)
	go func() { errs <- c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		select {
		case err := <-errs:
			return fmt.Errorf("watching Plumb's kinds: %w", err)
		default:
			return fmt.Errorf("watching Plumb's kinds: no first list within %s: may the UI's identity list and watch them in every namespace?", syncTimeout)
		}
	}
	return nil
}
