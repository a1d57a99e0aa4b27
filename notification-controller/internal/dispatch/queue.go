package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// queueIdle is how long a Provider's queue waits for work before its
// goroutine ends (a new delivery starts it again).
const queueIdle = time.Minute

// delivery is one event for one Alert, waiting on its Provider's queue.
type delivery struct {
	pending *pending
	alert   notificationv1.Alert
	event   *events.Event
}

// pending is an event on its way to one or more Providers: it is
// acknowledged when the last of its deliveries is done, or handed back at
// shutdown when any of them was interrupted.
type pending struct {
	msg jetstream.Msg

	mu          sync.Mutex
	left        int
	interrupted bool
}

// done records that one delivery of p ended; delivered is false when
// shutdown interrupted it.
func (d *Dispatcher) done(p *pending, delivered bool) {
	p.mu.Lock()
	p.left--
	if !delivered {
		p.interrupted = true
	}
	last, interrupted := p.left == 0, p.interrupted
	p.mu.Unlock()
	switch {
	case !last:
	case interrupted:
		d.stream.setAside(p.msg)
	default:
		d.stream.settle(p.msg, outcome{ack: true})
	}
}

// providerQueues holds one FIFO queue and one goroutine per Provider
// (namespace/name), so a slow or failing Provider, waiting out its timeout
// and retries, delays only its own deliveries. Deliveries to one Provider
// stay in stream order, which keeps the events about one object in order.
type providerQueues struct {
	mu sync.Mutex
	m  map[string]*queue
	wg sync.WaitGroup
}

type queue struct {
	items []delivery
	wake  chan struct{}
}

// push appends dl to its Provider's queue, starting the queue's goroutine
// when it has none.
func (qs *providerQueues) push(ctx context.Context, d *Dispatcher, dl delivery) {
	key := dl.alert.Namespace + "/" + dl.alert.Spec.ProviderRef.Name
	qs.mu.Lock()
	if qs.m == nil {
		qs.m = map[string]*queue{}
	}
	q, ok := qs.m[key]
	if !ok {
		q = &queue{wake: make(chan struct{}, 1)}
		qs.m[key] = q
		qs.wg.Add(1)
		go qs.serve(ctx, d, key, q)
	}
	q.items = append(q.items, dl)
	d.Metrics.queued(dl.alert.Namespace, dl.alert.Spec.ProviderRef.Name, len(q.items))
	qs.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// serve delivers a queue's items one at a time. After ctx ends it hands
// what is left back undelivered; it ends when the queue is empty and ctx
// has ended or the queue stayed idle for queueIdle.
func (qs *providerQueues) serve(ctx context.Context, d *Dispatcher, key string, q *queue) {
	defer qs.wg.Done()
	idle := false
	for {
		qs.mu.Lock()
		if len(q.items) == 0 {
			if idle || ctx.Err() != nil {
				delete(qs.m, key)
				qs.mu.Unlock()
				return
			}
			qs.mu.Unlock()
			select {
			case <-q.wake:
			case <-ctx.Done():
			case <-time.After(queueIdle):
				idle = true
			}
			continue
		}
		dl := q.items[0]
		q.items[0] = delivery{}
		q.items = q.items[1:]
		d.Metrics.queued(dl.alert.Namespace, dl.alert.Spec.ProviderRef.Name, len(q.items))
		qs.mu.Unlock()
		idle = false
		if ctx.Err() != nil {
			d.done(dl.pending, false)
			continue
		}
		d.done(dl.pending, d.deliver(ctx, &dl.alert, dl.event))
	}
}

// wait returns when every queue's goroutine has ended; call it after ctx
// ended and nothing pushes any more.
func (qs *providerQueues) wait() { qs.wg.Wait() }
