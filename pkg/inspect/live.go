package inspect

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/object"
)

const (
	// readConcurrency bounds the requests one ReadLive makes at a time.
	readConcurrency = 8
	// listPageSize is the page size of each list.
	listPageSize = 500
	// getsBelow is the group size under which single reads are cheaper
	// than listing a whole namespace's objects of a kind.
	getsBelow = 3
)

// LiveObjects is what ReadLive found: each entry's live object, or the
// error reading it. An object that does not exist is in neither map.
type LiveObjects struct {
	Objects map[object.ID]*unstructured.Unstructured
	Errors  map[object.ID]error
}

// Get returns the live object of an entry (nil when gone) and the error
// reading it.
func (l LiveObjects) Get(e kustomizev1.InventoryEntry) (*unstructured.Unstructured, error) {
	id := inventory.IDOf(e)
	return l.Objects[id], l.Errors[id]
}

// listKey groups entries that one list request reads.
type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// ReadLive reads the live objects of entries with c: one list per kind and
// namespace (paged), a few requests at a time, so that an inventory of
// thousands of objects costs a few dozen requests rather than one each.
// A kind and namespace with only a couple of entries is read object by
// object instead, and so is one whose list this identity may not make
// (get may still be allowed): never more than the identity may read.
func ReadLive(ctx context.Context, c client.Reader, entries []kustomizev1.InventoryEntry) LiveObjects {
	groups := map[listKey][]kustomizev1.InventoryEntry{}
	for _, e := range entries {
		k := listKey{gvk: schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}, namespace: e.Namespace}
		groups[k] = append(groups[k], e)
	}
	out := LiveObjects{Objects: map[object.ID]*unstructured.Unstructured{}, Errors: map[object.ID]error{}}
	var mu sync.Mutex
	found := func(id object.ID, obj *unstructured.Unstructured, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			out.Errors[id] = err
		case obj != nil:
			out.Objects[id] = obj
		}
	}
	// A slot is taken before a goroutine starts, so an inventory of
	// thousands of entries is never thousands of goroutines waiting.
	sem := make(chan struct{}, readConcurrency)
	var wg sync.WaitGroup
	// run starts f in a goroutine once a slot is free (not at all once
	// ctx ends); f calls release when done with its slot (at the latest
	// when it returns).
	run := func(f func(release func())) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			release := func() { once.Do(func() { <-sem }) }
			defer release()
			f(release)
		}()
	}
	getEach := func(es []kustomizev1.InventoryEntry) {
		for _, e := range es {
			run(func(func()) {
				obj, err := getLive(ctx, c, e)
				found(inventory.IDOf(e), obj, err)
			})
		}
	}
	for k, es := range groups {
		if len(es) < getsBelow {
			getEach(es)
			continue
		}
		run(func(release func()) {
			objs, err := listLive(ctx, c, k)
			if apierrors.IsForbidden(err) {
				// The single reads wait for slots of their own: this
				// one's first, or a full set of such lists would wait
				// on each other for ever.
				release()
				getEach(es)
				return
			}
			for _, e := range es {
				id := inventory.IDOf(e)
				if err != nil {
					found(id, nil, err)
					continue
				}
				found(id, objs[e.Name], nil)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		for _, e := range entries {
			id := inventory.IDOf(e)
			if out.Objects[id] == nil && out.Errors[id] == nil {
				out.Errors[id] = err
			}
		}
	}
	return out
}

// getLive reads one entry's object; nil when it is gone.
func getLive(ctx context.Context, c client.Reader, e kustomizev1.InventoryEntry) (*unstructured.Unstructured, error) {
	obj := inventory.Object(e)
	err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// listLive lists one kind in one namespace (every namespace for a
// cluster-scoped kind, whose entries have none), by name.
func listLive(ctx context.Context, c client.Reader, k listKey) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	opts := []client.ListOption{client.Limit(listPageSize)}
	if k.namespace != "" {
		opts = append(opts, client.InNamespace(k.namespace))
	}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			// A list's items carry no kind of their own in every API.
			obj.SetGroupVersionKind(k.gvk)
			out[obj.GetName()] = obj
		}
		cont := list.GetContinue()
		if cont == "" {
			return out, nil
		}
		opts = append(opts[:0:0], client.Limit(listPageSize), client.Continue(cont))
		if k.namespace != "" {
			opts = append(opts, client.InNamespace(k.namespace))
		}
	}
}
