package testenv

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// StartManager runs mgr until the test ends, and fails the test when
// mgr.Start returns an error: for tests that run a controller (or several,
// as shards) of their own beside the package's.
func StartManager(t testing.TB, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager stopped with: %v", err)
		}
	})
}
