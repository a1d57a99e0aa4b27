package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/e2e/bench/benchkit"
)

// tracker follows one side's HelmReleases through one phase and notes when
// each first met the phase's condition. It lists and watches before the
// phase's writes go out, so no change is missed.
type tracker struct {
	mu      sync.Mutex
	done    func(*unstructured.Unstructured) bool
	firstAt map[string]time.Time
	latest  map[string]*unstructured.Unstructured
	changed chan struct{}
	err     error
	stop    context.CancelFunc
}

func (b *bench) track(ctx context.Context, s *side, done func(*unstructured.Unstructured) bool) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{done: done, firstAt: map[string]time.Time{}, latest: map[string]*unstructured.Unstructured{},
		changed: make(chan struct{}, 1), stop: cancel}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
	if err := b.wc.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		cancel()
		return nil, err
	}
	for i := range list.Items {
		t.see(&list.Items[i], time.Now())
	}
	open := func(rv string) (watch.Interface, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(list.GroupVersionKind())
		return b.wc.Watch(ctx, l, client.InNamespace(s.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	go func() {
		err := benchkit.Follow(ctx, list.GetResourceVersion(), open, func(ev watch.Event) {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Bookmark {
				t.see(u, time.Now())
			}
		})
		if err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
		}
	}()
	return t, nil
}

func (t *tracker) see(u *unstructured.Unstructured, at time.Time) {
	t.mu.Lock()
	t.latest[u.GetName()] = u
	_, seen := t.firstAt[u.GetName()]
	met := !seen && t.done(u)
	if met {
		t.firstAt[u.GetName()] = at
	}
	t.mu.Unlock()
	if met {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// wait waits until n HelmReleases met the condition and returns how long
// after start each did, sorted.
func (t *tracker) wait(ctx context.Context, n int, start time.Time, progress func(have int)) ([]time.Duration, error) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		t.mu.Lock()
		have, err := len(t.firstAt), t.err
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if have >= n {
			t.mu.Lock()
			defer t.mu.Unlock()
			var out []time.Duration
			for _, at := range t.firstAt {
				out = append(out, at.Sub(start))
			}
			sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d caught up: %w; %s", have, n, ctx.Err(), t.laggards())
		case <-tick.C:
			progress(have)
		case <-t.changed:
		}
	}
}

// laggards describes a few HelmReleases that did not catch up.
func (t *tracker) laggards() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for name := range t.latest {
		if _, ok := t.firstAt[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := ""
	for i, name := range names {
		if i == 3 {
			out += fmt.Sprintf(" … and %d more", len(names)-3)
			break
		}
		out += fmt.Sprintf("%s: %s; ", name, readyMessage(t.latest[name]))
	}
	return out
}
