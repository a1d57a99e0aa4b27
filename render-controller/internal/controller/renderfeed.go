package controller

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/renderfeed"
)

// DefaultRenderGrace is how often a render offered on the feed and not
// yet in status is looked at again: render-controller writes it itself
// then unless a sync-controller is still subscribed. It is
// sync-controller's own grace for a render (its renderwait.go), so that
// with sync-controller down a render still shows in status within a
// minute.
const DefaultRenderGrace = 30 * time.Second

// subscribedGraceFactor: while a sync-controller is subscribed, an
// offered render waits this many graces (5 minutes by default) before
// render-controller writes it. A subscribed sync-controller takes each
// render at its next reconcile, which a fleet created at once on a busy
// API server delays past one grace (docs/bench/fleet.md, run W1: most
// renders were written twice); only one that never writes (suspended,
// say) waits the whole of it.
const subscribedGraceFactor = 10

// writeStatus writes a Kustomization's render status, or hands it to
// sync-controller (docs/design/render-feed.md). A good render not yet in
// status is offered on the feed when a sync-controller is subscribed and
// not written: sync-controller writes renderedArtifact and Rendered with
// the outcome of the sync that applies it, one status write instead of
// two. render-controller writes itself, as when there is no feed: a
// failure (Rendered=False, the last good artifact kept), any render while
// no subscriber is connected, a record over the feed's size bound, and a
// render no sync-controller took within the grace. Each such write
// withdraws the object's record from the feed, so that no later status
// write of sync-controller's carries an older render over it.
func (r *KustomizationReconciler) writeStatus(ctx context.Context, obj, read *kustomizev1.Kustomization) error {
	key := client.ObjectKeyFromObject(obj)
	if rec, ok := offerable(obj, read); ok && r.Feed.Subscribed() {
		rec.Replaces = r.replaces(read)
		since, err := r.Feed.Offer(rec, time.Now())
		switch {
		case err != nil:
			ctrl.LoggerFrom(ctx).Info("writing the render to status: it does not fit the render feed", "reason", err.Error())
		case time.Since(since) < subscribedGraceFactor*r.grace():
			return nil
		}
	}
	changed := !apiequality.Semantic.DeepEqual(ownedStatus(obj), ownedStatus(read))
	if r.Feed != nil {
		if rec, _, ok := r.Feed.Pending(key); ok {
			if changed {
				r.Feed.Withdraw(rec)
			} else {
				r.Feed.Taken(key) // status has it: sync-controller wrote it
			}
		}
	}
	if !changed {
		return nil
	}
	m, err := plumbreconcile.ToStatusMap(ownedStatus(obj))
	if err != nil {
		return err
	}
	if err := plumbreconcile.ApplyStatus(ctx, r.Client, obj, FieldManager, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.wroteRender(obj)
	return nil
}

// writtenRender is the render status render-controller last wrote to an
// object itself (renderStatusDigest), by UID.
type writtenRender struct {
	uid    types.UID
	digest string
}

// wroteRender remembers obj's render status as the last one
// render-controller wrote to it.
func (r *KustomizationReconciler) wroteRender(obj *kustomizev1.Kustomization) {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]writtenRender{}
	}
	r.written[client.ObjectKeyFromObject(obj)] = writtenRender{uid: obj.UID, digest: renderStatusDigest(obj)}
}

// replaces names the render statuses a render offered now is newer than
// (renderfeed.Record.Replaces): the last one render-controller wrote to
// the object itself, known exactly, and the one this reconcile read.
// The read alone would not do: it comes from the cache, which may not
// have render-controller's own last write yet, nor sync-controller's
// write of the previous record; a record naming a status older than the
// stored one is dropped by sync-controller and offered again with a newer
// read (Feed.Offer) when the newer status reaches this cache: an update of
// an object whose render waits on the feed (pendingUpdated). Both are older
// than the offer, so a write of render-controller's after it — which
// withdraws the record — names neither.
func (r *KustomizationReconciler) replaces(read *kustomizev1.Kustomization) []string {
	digest := renderStatusDigest(read)
	r.cacheMu.Lock()
	w, ok := r.written[client.ObjectKeyFromObject(read)]
	r.cacheMu.Unlock()
	if !ok || w.uid != read.UID || w.digest == digest {
		return []string{digest}
	}
	return []string{w.digest, digest}
}

// renderStatusDigest is the identity of obj's render status, as
// sync-controller computes it from the object it reads.
func renderStatusDigest(obj *kustomizev1.Kustomization) string {
	return renderfeed.StatusDigest(obj.Status.RenderedArtifact, conditions.Get(obj, kustomizev1.RenderedCondition))
}

// offerable returns the record of obj's render when the reconcile ended
// with a good render of its generation that its status (read) does not
// have yet.
func offerable(obj, read *kustomizev1.Kustomization) (renderfeed.Record, bool) {
	c := conditions.Get(obj, kustomizev1.RenderedCondition)
	a := obj.Status.RenderedArtifact
	if a == nil || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != obj.Generation {
		return renderfeed.Record{}, false
	}
	if old := conditions.Get(read, kustomizev1.RenderedCondition); old != nil && old.Status == metav1.ConditionTrue &&
		old.ObservedGeneration == obj.Generation && apiequality.Semantic.DeepEqual(read.Status.RenderedArtifact, a) {
		return renderfeed.Record{}, false
	}
	return renderfeed.Record{
		Kind: kustomizev1.KustomizationKind, Namespace: obj.Namespace, Name: obj.Name,
		UID: obj.UID, Generation: obj.Generation, Artifact: a.DeepCopy(), Message: c.Message,
	}, true
}

// pendingRender puts obj's render offered on the feed and not yet taken
// into obj, as if this reconcile had made it, when it is of obj's UID and
// generation, made with the inputs of key (the reconcile's cache key) and
// still intact in storage: the reconcile at the end of its grace then
// writes it without rendering it again.
func (r *KustomizationReconciler) pendingRender(ctx context.Context, obj *kustomizev1.Kustomization, cached, key string) bool {
	if r.Feed == nil || cached != key {
		return false
	}
	rec, _, ok := r.Feed.Pending(client.ObjectKeyFromObject(obj))
	if !ok || rec.UID != obj.UID || rec.Generation != obj.Generation || !r.store.Intact(ctx, rec.Artifact) {
		return false
	}
	obj.Status.RenderedArtifact = rec.Artifact.DeepCopy()
	conditions.MarkTrue(obj, kustomizev1.RenderedCondition, kustomizev1.RenderSucceededReason, "%s", rec.Message)
	return true
}

// untilGrace shortens result's requeue while obj's render waits on the
// feed, to the next look while a sync-controller is subscribed (nextLook:
// at 1, 2, 4 and 8 graces from the offer, then at the end of
// subscribedGraceFactor graces, when render-controller writes it itself),
// one grace while none is. It used to be one grace either way,
// and a render waits on the feed as long as sync-controller's queue is
// long — in a fleet created at once, in proportion to the fleet — so each
// Kustomization was reconciled again every grace for nothing: 8.7
// reconciles per Kustomization at N=3,000, and render-controller's CPU per
// Kustomization doubled from N=1,000 (docs/bench/fleet.md, "Fleet runs
// S1–S3"). What the wake-ups caught comes as events instead: the status
// write that takes or replaces the render (pendingUpdated) and the last
// subscriber leaving (feedSource).
func (r *KustomizationReconciler) untilGrace(obj *kustomizev1.Kustomization, result ctrl.Result) ctrl.Result {
	if r.Feed == nil {
		return result
	}
	rec, since, ok := r.Feed.Pending(client.ObjectKeyFromObject(obj))
	if !ok || rec.UID != obj.UID {
		return result
	}
	wait := r.grace() + time.Second
	if r.Feed.Subscribed() {
		wait = nextLook(time.Since(since), r.grace())
	}
	if result.RequeueAfter == 0 || wait < result.RequeueAfter {
		result.RequeueAfter = wait
	}
	return result
}

// nextLook is how long after elapsed (since the offer) a render waiting
// on the feed of a subscribed sync-controller is looked at again: at 1,
// 2, 4 and 8 graces from the offer, then at the end of the
// subscribedGraceFactor graces, when render-controller writes it. The
// events (pendingUpdated) bring it back when sync-controller takes it or
// the status it replaces moves; these looks are the net for a wake-up
// that no event brings — an offer made from a read older than a write
// whose event came before the offer, whose record sync-controller drops
// and no later write names — so that such a render waits a grace or two
// early on rather than the ten. At most five looks in ten graces, where
// one a grace was ten, and fewer the sooner sync-controller takes it.
func nextLook(elapsed, grace time.Duration) time.Duration {
	for k := time.Duration(1); k < subscribedGraceFactor; k *= 2 {
		if at := k * grace; at > elapsed {
			return at - elapsed + time.Second
		}
	}
	return max(grace+time.Second, subscribedGraceFactor*grace-elapsed+time.Second)
}

// pendingUpdated passes an update of a Kustomization whose render waits
// on the feed. Status changes are otherwise filtered out (render-
// controller renders specs), but this one is news for the feed: it is
// sync-controller's write taking the render, which drops the pending
// record (writeStatus), or a write that makes the record stale, which
// offers it again from the new status. One reconcile at that moment
// instead of one every grace while the render waits.
type pendingUpdated struct {
	predicate.Funcs
	feed *renderfeed.Feed
}

func (p pendingUpdated) Create(event.CreateEvent) bool   { return false }
func (p pendingUpdated) Delete(event.DeleteEvent) bool   { return false }
func (p pendingUpdated) Generic(event.GenericEvent) bool { return false }

func (p pendingUpdated) Update(e event.UpdateEvent) bool {
	if p.feed == nil || e.ObjectNew == nil {
		return false
	}
	rec, _, ok := p.feed.Pending(client.ObjectKeyFromObject(e.ObjectNew))
	return ok && rec.UID == e.ObjectNew.GetUID()
}

// feedSource is a source of the Kustomization controller: every grace,
// while no sync-controller is subscribed, it queues each Kustomization
// whose render waits on the feed, so that render-controller writes the
// render itself within about a grace of the last subscriber leaving,
// as it did when each offered render was looked at every grace. The
// objects are those this reconciler rendered (its cache keys); the feed
// offers nothing while no one is subscribed, so the list only shrinks.
func (r *KustomizationReconciler) feedSource() source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) error {
		if r.Feed == nil {
			return nil
		}
		go func() {
			tick := time.NewTicker(r.grace())
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if r.Feed.Subscribed() {
					continue
				}
				for _, key := range r.pendingKeys() {
					q.Add(ctrl.Request{NamespacedName: key})
				}
			}
		}()
		return nil
	})
}

// pendingKeys returns the objects this reconciler rendered whose render
// waits on the feed.
func (r *KustomizationReconciler) pendingKeys() []types.NamespacedName {
	r.cacheMu.Lock()
	keys := make([]types.NamespacedName, 0, len(r.cache))
	for key := range r.cache {
		keys = append(keys, key)
	}
	r.cacheMu.Unlock()
	pending := keys[:0]
	for _, key := range keys {
		if _, _, ok := r.Feed.Pending(key); ok {
			pending = append(pending, key)
		}
	}
	return pending
}

func (r *KustomizationReconciler) grace() time.Duration {
	return defaulted(r.RenderGrace, DefaultRenderGrace)
}
