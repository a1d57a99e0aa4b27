package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Lazy is one environment shared by the tests of a package and started by
// the first test that asks for it, so that a run of the package's unit or
// fuzz tests alone (fuzz workers run TestMain too) starts nothing.
//
//	var shared = testenv.Lazy{Options: []testenv.Option{testenv.WithSecureNATS()}}
//
//	func TestMain(m *testing.M) { code := m.Run(); shared.Stop(); os.Exit(code) }
type Lazy struct {
	// Options are given to Start.
	Options []Option

	once sync.Once
	env  *Environment
	err  error
}

// Get starts the environment on the first call and returns it; it fails
// the test when the environment cannot start.
func (l *Lazy) Get(t testing.TB) *Environment {
	t.Helper()
	l.once.Do(func() { l.env, l.err = Start(l.Options...) })
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.env
}

// Stop stops the environment if a test started it, reporting a failure to
// stop on stderr. Call it from TestMain after m.Run.
func (l *Lazy) Stop() {
	if l.env == nil {
		return
	}
	if err := l.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
