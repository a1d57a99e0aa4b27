package benchkit

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// opens hands out one fake watch per open and records the resourceVersion
// each was opened at.
type opens struct {
	mu      sync.Mutex
	at      []string
	watches chan *watch.FakeWatcher
}

func newOpens() *opens { return &opens{watches: make(chan *watch.FakeWatcher, 4)} }

func (o *opens) open(rv string) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(4, false)
	o.mu.Lock()
	o.at = append(o.at, rv)
	o.mu.Unlock()
	o.watches <- w
	return w, nil
}

func (o *opens) next(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-o.watches:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the watch was not opened")
		return nil
	}
}

func object(rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
}

// A watch the server ends is opened again from the last resourceVersion
// seen, and its events keep coming to the handler.
func TestFollowOpensTheWatchAgainWhereItEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOpens()
	seen := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, "3", o.open, func(ev watch.Event) {
			seen <- ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion
		})
	}()
	first := o.next(t)
	first.Modify(object("5"))
	if got := <-seen; got != "5" {
		t.Fatalf("first event: resourceVersion %q, want 5", got)
	}
	first.Stop() // the API server's request timeout
	second := o.next(t)
	second.Modify(object("7"))
	if got := <-seen; got != "7" {
		t.Fatalf("event after the reopen: resourceVersion %q, want 7", got)
	}
	o.mu.Lock()
	at := append([]string(nil), o.at...)
	o.mu.Unlock()
	if len(at) != 2 || at[0] != "3" || at[1] != "5" {
		t.Fatalf("opened at %v, want [3 5]", at)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow after its context ended: %v", err)
	}
}

// A resourceVersion the server no longer has ends Follow with an error:
// the events in between are lost, and a figure must not pass over them.
func TestFollowEndsWithAnErrorWhenTheResourceVersionIsGone(t *testing.T) {
	o := newOpens()
	done := make(chan error, 1)
	go func() {
		done <- Follow(context.Background(), "3", o.open, func(watch.Event) {})
	}()
	gone := apierrors.NewResourceExpired("too old resource version: 3 (40)")
	o.next(t).Error(&gone.ErrStatus)
	select {
	case err := <-done:
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("Follow's error = %v, want the 410 Gone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow went on after the 410 Gone")
	}
}
