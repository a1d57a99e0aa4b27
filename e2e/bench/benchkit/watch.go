package benchkit

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
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

// Follow hands each event of the watch w, opened at resourceVersion
// rv, to handle until ctx ends; when the server ends the watch, it opens
// it again from the last resourceVersion seen (bookmarks included). It
// returns the error of an open that failed, nil once ctx ended.
func Follow(ctx context.Context, rv string, w watch.Interface, open func(rv string) (watch.Interface, error), handle func(watch.Event)) error {
	for {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			if m, err := apimeta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			handle(ev)
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		var err error
		if w, err = open(rv); err != nil {
			return err
		}
	}
}
