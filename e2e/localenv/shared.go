package localenv

import (
	"context"
	"sync"
	"time"
)

// Shared is one environment that tests use in turn, each in namespaces of
// its own, instead of a start and a Stop each: with a real node those are
// most of a story's time, and the machine runs one node at a time
// (docs/design/node.md, "Time in the tests"). The first Acquire starts it;
// it stops when nobody used it for IdleStop (so a real node's lock is not
// held while other tests run), or at Stop.
type Shared struct {
	Options Options
	// IdleStop is how long the environment stays up after its last user
	// released it; default 10 s, time enough for the next test to start.
	IdleStop time.Duration

	mu    sync.Mutex
	env   *Env
	users int
	idle  *time.Timer
	// err is why the last start failed: the next users fail at once
	// rather than each wait out a start that cannot succeed.
	err error
	// Started is called after each start with how long it took.
	Started func(took time.Duration)
	// Stopped is called after each stop with how long it took and its error.
	Stopped func(took time.Duration, err error)
}

// Acquire returns the environment, started if it does not run, and a
// release for when the caller is done with it.
func (s *Shared) Acquire() (*Env, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, nil, s.err
	}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.env == nil {
		began := time.Now()
		env, err := Start(context.Background(), s.Options)
		if err != nil {
			s.err = err
			return nil, nil, err
		}
		s.env = env
		if s.Started != nil {
			s.Started(time.Since(began))
		}
	}
	s.users++
	env := s.env
	var once sync.Once
	return env, func() { once.Do(func() { s.release(env) }) }, nil
}

func (s *Shared) release(env *Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != env {
		return
	}
	s.users--
	if s.users > 0 {
		return
	}
	wait := s.IdleStop
	if wait == 0 {
		wait = 10 * time.Second
	}
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.idle == t && s.users == 0 {
			s.stopLocked()
		}
	})
	s.idle = t
}

// Stop stops the environment now if it runs, whoever uses it.
func (s *Shared) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Shared) stopLocked() error {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.env == nil {
		return nil
	}
	began := time.Now()
	err := s.env.Stop()
	s.env, s.users = nil, 0
	if s.Stopped != nil {
		s.Stopped(time.Since(began), err)
	}
	return err
}
