package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/object"
)

// Get returns the live object like names, or nil when it does not exist.
func (e *Engine) Get(ctx context.Context, like *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(like.GroupVersionKind())
	err := e.client.Get(ctx, client.ObjectKeyFromObject(like), obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, e.explain(object.IDOf(like), err)
	}
	return obj, nil
}

// CreateHook applies a hook object. Hooks are watched like managed objects
// (so waits wake on their changes) but kept out of the engine's records and
// of every inventory.
func (e *Engine) CreateHook(ctx context.Context, hook *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := e.watcher.Watch(ctx, hook.GroupVersionKind()); err != nil {
		return nil, err
	}
	obj := hook.DeepCopy()
	if err := e.applyWhole(ctx, obj); err != nil {
		return nil, e.explain(object.IDOf(hook), err)
	}
	return obj, nil
}

// Delete deletes the object (background propagation, so a Job's Pods go
// too) and, when wait is set, waits until it is gone.
func (e *Engine) Delete(ctx context.Context, obj *unstructured.Unstructured, wait bool) error {
	err := e.client.Delete(ctx, obj.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting: %w", e.explain(object.IDOf(obj), err))
	}
	if wait {
		return e.waitGone(ctx, obj)
	}
	return nil
}
