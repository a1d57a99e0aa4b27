package benchfig

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Observation is one change of a watched object's drift-prone value, as a
// watch delivered it.
type Observation struct {
	ResourceVersion string
	Value           string
	At              time.Time
}

// AwaitRevert reads an object's changes until the foreign write (its
// resourceVersion) has been seen and then a change back to the desired
// value, and returns the time from from until that change arrived.
func AwaitRevert(ctx context.Context, seen <-chan Observation, foreignRV, desired string, from time.Time, timeout time.Duration) (time.Duration, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	foreignSeen := false
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timer.C:
			return 0, fmt.Errorf("not reverted within %s (foreign write seen: %t)", timeout, foreignSeen)
		case o := <-seen:
			if o.ResourceVersion == foreignRV {
				foreignSeen = true
				continue
			}
			if foreignSeen && o.Value == desired {
				return o.At.Sub(from), nil
			}
		}
	}
}

// Followers hands a watch's observations of an object to whoever follows
// that object (by a key the watch and the follower agree on); the
// observations of objects no one follows are dropped.
type Followers struct {
	mu      sync.Mutex
	waiters map[string]chan Observation
}

// Follow starts collecting the changes of one object.
func (f *Followers) Follow(key string) <-chan Observation {
	ch := make(chan Observation, 256)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiters == nil {
		f.waiters = map[string]chan Observation{}
	}
	f.waiters[key] = ch
	return ch
}

// Unfollow stops collecting them.
func (f *Followers) Unfollow(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiters, key)
}

// Deliver hands o to the follower of key, if any, without blocking: a
// follower that does not read (it has its answer) loses nothing it needs.
func (f *Followers) Deliver(key string, o Observation) {
	f.mu.Lock()
	ch := f.waiters[key]
	f.mu.Unlock()
	if ch != nil {
		select {
		case ch <- o:
		default:
		}
	}
}
