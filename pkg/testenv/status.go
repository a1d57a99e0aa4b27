package testenv

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetStatus writes obj's status through the status subresource, as its
// controller would, after mutate changed the freshly read object. A
// conflict with another writer is retried for ten seconds; then the test
// fails.
func SetStatus[T client.Object](ctx context.Context, t testing.TB, c client.Client, obj T, mutate func(T)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			mutate(obj)
			err = c.Status().Update(ctx, obj)
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writing the status of %s: %v", obj.GetName(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
