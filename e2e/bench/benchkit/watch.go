package benchkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnsureNamespaces creates the namespaces and waits until
// kube-controller-manager has given each its default ServiceAccount, so
// that its work on new namespaces is over before anything is counted.
func EnsureNamespaces(ctx context.Context, write, read client.Client, names []string) error {
	err := ForEach(ctx, len(names), 32, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
		if err := write.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", names[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var sas corev1.ServiceAccountList
		if err := read.List(ctx, &sas, client.MatchingFields{"metadata.name": "default"}); err != nil {
			return err
		}
		have := 0
		for _, sa := range sas.Items {
			if want[sa.Namespace] {
				have++
			}
		}
		if have == len(names) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 5m, %d of %d namespaces have their default ServiceAccount", have, len(names))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Follow hands each event of a watch opened at resourceVersion rv (a
// list's) to handle until ctx ends. It is client-go's RetryWatcher: when
// the server ends the watch, it is opened again from the last
// resourceVersion seen, bookmarks included, so a soak outlives the API
// server's request timeout. It returns nil once ctx ended, or why the
// watch ended before: a resourceVersion the server no longer has (410
// Gone: events were lost, and a figure after it would not count them) or
// a watch the client may not open.
func Follow(ctx context.Context, rv string, open func(rv string) (watch.Interface, error), handle func(watch.Event)) error {
	opener := &toolscache.ListWatch{WatchFuncWithContext: func(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
		return open(options.ResourceVersion)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, opener)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return fmt.Errorf("the watch ended: %w", apierrors.FromObject(ev.Object))
		}
		handle(ev)
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("the watch ended before its context")
}
