package benchkit

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BareManager is the field manager of the bare server-side-apply loop.
const BareManager = "bench-bare"

// ApplyAll server-side-applies every object, force, under the field
// manager BareManager, with at most workers requests in flight: the bare
// loop, the same call sync-controller's engine makes.
func ApplyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, workers int) error {
	return ForEach(ctx, len(objs), workers, func(i int) error {
		o := objs[i].DeepCopy()
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(BareManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		return nil
	})
}

// ForEach runs fn(0) … fn(n-1) with at most workers at a time and returns
// the first error.
func ForEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	sem := make(chan struct{}, workers)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
