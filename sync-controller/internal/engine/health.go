package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/health"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// HealthReport is the health of one object.
type HealthReport struct {
	ID object.ID
	health.Result
}

// healthCache remembers the health of objects by resourceVersion, so a
// resync of unchanged objects needs no GET to know they are still healthy.
type healthCache struct {
	mu sync.Mutex
	m  map[healthKey]healthEntry
}

type healthEntry struct {
	resourceVersion string
	result          health.Result
}

func (c *healthCache) get(key healthKey, rv string) (health.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || e.resourceVersion != rv || rv == "" {
		return health.Result{}, false
	}
	return e.result, true
}

func (c *healthCache) put(key healthKey, rv string, r health.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[healthKey]healthEntry{}
	}
	c.m[key] = healthEntry{resourceVersion: rv, result: r}
}

// HealthPollFallback is how often a health wait re-reads objects when no
// watch event arrived, in case an event was missed.
var HealthPollFallback = 2 * time.Second

// WaitHealthy waits until every object is Healthy at its current generation.
// It returns early, with an error naming the object, when one is Degraded
// (HealthDegradedError); when ctx ends first the error names every object
// still unhealthy and why (HealthTimeoutError). Either error adds what the
// newest Pods of an unhealthy workload say (explainByPods).
// known holds objects as the API server returned them (apply results), used
// before anything is read again where they tell health (answerTellsHealth:
// a Deployment answered with its metadata only is read). Waits wake on watch events, not on a timer.
//
// progress, when not nil, hears which objects are still pending and why
// after each round (on a watch event, or HealthPollFallback later): what a
// long wait is waiting for, shown while it lasts.
func (e *Engine) WaitHealthy(ctx context.Context, objs []*unstructured.Unstructured, known map[object.ID]*unstructured.Unstructured, progress func([]HealthReport)) ([]HealthReport, error) {
	pending := map[object.ID]health.Result{}
	kinds := map[object.ID]*unstructured.Unstructured{}
	for _, obj := range objs {
		if manage.Excluded(obj) != "" {
			// Never written (Flux's reconcile: disabled or ssa: Ignore in
			// Git), so maybe never there: nothing to wait for, as in Flux.
			continue
		}
		id := object.IDOf(obj)
		pending[id] = health.Result{Status: health.Unknown}
		kinds[id] = obj
	}
	// first: the round before any wake-up, when the apply results are
	// the freshest reading; polled: a round woken by the fallback timer
	// rather than by a watch event, which reads every pending object again.
	first, polled := true, false
	for {
		changes := e.watcher.Changes()
		for id := range pending {
			var r health.Result
			obj, isKnown := known[id]
			cached, isCached := e.cachedHealth(ctx, kinds[id], polled)
			switch {
			case first && isKnown && e.answerTellsHealth(obj, kinds[id]):
				r = e.evaluate(id, obj)
			case isCached:
				r = cached
			default:
				var err error
				if r, err = e.readHealth(ctx, id, kinds[id]); err != nil {
					if ctx.Err() != nil {
						// The wait's deadline cut the read short: that is
						// the wait timing out, said as such with where
						// each object stood, not a failed read ("context
						// deadline exceeded"), whichever of the two the
						// deadline happened to fall in.
						return e.timedOut(ctx, pending, kinds)
					}
					return nil, err
				}
			}
			if r.Status == health.Degraded {
				return reports(pending), e.degraded(ctx, id, r, kinds[id])
			}
			if r.Status == health.Healthy {
				delete(pending, id)
				continue
			}
			pending[id] = r
		}
		first = false
		if len(pending) == 0 {
			return nil, nil
		}
		if progress != nil {
			progress(reports(pending))
		}
		select {
		case <-ctx.Done():
			return e.timedOut(ctx, pending, kinds)
		case <-changes:
			polled = false
		case <-time.After(HealthPollFallback):
			polled = true
		}
	}
}

// timedOut is WaitHealthy's answer when ctx ended: the objects still
// pending, what their Pods say, and a HealthTimeoutError naming them.
func (e *Engine) timedOut(ctx context.Context, pending map[object.ID]health.Result, kinds map[object.ID]*unstructured.Unstructured) ([]HealthReport, error) {
	pend := reports(pending)
	e.explainByPods(ctx, pend, kinds)
	return pend, &HealthTimeoutError{Pending: pend}
}

// cachedHealth returns the remembered health of obj when the watch cache
// shows it unchanged since it was judged (the same resourceVersion), so a
// round needs a GET only for the objects that changed. A round is woken by
// a change of any object of the watcher, most of them not obj: when a
// hundred releases roll out at once, reading every pending Deployment on
// each wake-up sent 70 GETs per release (docs/bench/helm-release.md, run
// 2). A round woken by the fallback timer (polled) reads again anyway, in
// case the watch missed an event.
func (e *Engine) cachedHealth(ctx context.Context, obj *unstructured.Unstructured, polled bool) (health.Result, bool) {
	if polled {
		return health.Result{}, false
	}
	id := object.IDOf(obj)
	live, err := e.watcher.Lookup(ctx, obj.GroupVersionKind(), id.Namespace, id.Name)
	if err != nil || live == nil {
		return health.Result{}, false
	}
	return e.health.get(e.healthKey(id), live.ResourceVersion)
}

func (e *Engine) readHealth(ctx context.Context, id object.ID, like *unstructured.Unstructured) (health.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(like.GroupVersionKind())
	err := e.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	if apierrors.IsNotFound(err) {
		return health.Result{Status: health.Missing, Message: "not found"}, nil
	}
	if err != nil {
		if ferr := Forbidden(id, err); ferr != nil {
			return health.Result{}, fmt.Errorf("reading for health: %w", ferr)
		}
		return health.Result{}, fmt.Errorf("%s: reading for health: %w", id, err)
	}
	return e.evaluate(id, obj), nil
}

func (e *Engine) evaluate(id object.ID, obj *unstructured.Unstructured) health.Result {
	r := e.checks.Evaluate(obj)
	e.health.put(e.healthKey(id), obj.GetResourceVersion(), r)
	return r
}

// healthKey keys the health cache by identity, health checks and object:
// a result read by one identity is not served to another, which might not
// be allowed to read the object, nor one judged by other expressions.
func (e *Engine) healthKey(id object.ID) healthKey {
	return healthKey{e.identity, e.checks.Key(), id}
}

type healthKey struct {
	identity string
	checks   string
	id       object.ID
}

// HealthTimeoutError is WaitHealthy's error when objects are still not
// healthy at the deadline. Its text says where each one stood ("2 of 3
// updated replicas available"), which differs from one attempt to the
// next while the failure stays the same; Summary names only the objects
// and their status, for the event that reports it (the figures go into
// its volatile metadata, pkg/events).
type HealthTimeoutError struct {
	Pending []HealthReport
}

func (e *HealthTimeoutError) Error() string {
	parts := make([]string, len(e.Pending))
	for i, r := range e.Pending {
		parts[i] = fmt.Sprintf("%s is %s", r.ID, r.Result)
	}
	return "timed out waiting for health: " + strings.Join(parts, "; ")
}

// Summary is the error without what the health rules said of each object:
// "timed out waiting for health: Deployment/apps/web is Progressing".
func (e *HealthTimeoutError) Summary() string {
	parts := make([]string, len(e.Pending))
	for i, r := range e.Pending {
		parts[i] = fmt.Sprintf("%s is %s", r.ID, r.Result.Status)
	}
	return "timed out waiting for health: " + strings.Join(parts, "; ")
}

func reports(pending map[object.ID]health.Result) []HealthReport {
	out := make([]HealthReport, 0, len(pending))
	for id, r := range pending {
		out = append(out, HealthReport{ID: id, Result: r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}
