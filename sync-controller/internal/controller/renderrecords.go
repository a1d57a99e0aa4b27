package controller

import (
	"sync"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/renderfeed"
)

// maxRenderRecords bounds the records kept: one per object of the shard,
// dropped as each is taken or found stale; past it a record is dropped
// and its render reaches status through render-controller's grace.
const maxRenderRecords = 100_000

// RenderRecords are the renders read from render-controller's feed
// (pkg/renderfeed, --render-feed-url) and not yet in their
// Kustomizations' status, by object: a sync takes its render from here
// and writes it with its outcome, one status write per render
// (docs/design/render-feed.md). Each record queues its object (Source).
// HelmReleases' renders are not on the feed: render-controller writes
// them as before.
type RenderRecords struct {
	Log logr.Logger

	mu    sync.Mutex
	byKey map[types.NamespacedName]keptRecord
	// seq numbers the records as Handle keeps them: a run tells the
	// record it adopted from one handed on since, even of the same
	// render (adoption).
	seq uint64
	// carried is, per object, the render status this controller last
	// wrote itself from a record: the watch event of that write is not
	// news of a render (renderedChanged), and a later record may be taken
	// over it (adopt).
	carried map[types.NamespacedName]carriedRender
	events  chan event.GenericEvent
}

// carriedRender is a render status this controller wrote, by UID and
// renderfeed.StatusDigest.
type carriedRender struct {
	uid    types.UID
	digest string
}

// keptRecord is a record kept, numbered in the order Handle kept it.
type keptRecord struct {
	renderfeed.Record
	seq uint64
}

// adoption is the record a run put into its object (adopt): the run's
// status write carries it, and a conflict with a render status
// render-controller wrote since drops it (stale) unless a newer record
// replaced it meanwhile.
type adoption struct {
	seq uint64
}

// NewRenderRecords returns an empty set of records.
func NewRenderRecords(log logr.Logger) *RenderRecords {
	return &RenderRecords{Log: log, events: make(chan event.GenericEvent, 1024)}
}

// Handle keeps a record read from the feed and queues its object; a
// withdrawal drops the object's record.
func (rr *RenderRecords) Handle(rec renderfeed.Record) {
	if rec.Kind != kustomizev1.KustomizationKind {
		rr.Log.Info("dropping a render record of a kind the feed does not carry", "kind", rec.Kind, "object", rec.Key())
		return
	}
	key := rec.Key()
	rr.mu.Lock()
	if rec.Withdrawn {
		delete(rr.byKey, key)
		rr.mu.Unlock()
		return
	}
	if _, ok := rr.byKey[key]; !ok && len(rr.byKey) >= maxRenderRecords {
		rr.mu.Unlock()
		rr.Log.Info("dropping a render record: too many kept", "object", key, "max", maxRenderRecords)
		return
	}
	if rr.byKey == nil {
		rr.byKey = map[types.NamespacedName]keptRecord{}
	}
	rr.seq++
	rr.byKey[key] = keptRecord{Record: rec, seq: rr.seq}
	rr.mu.Unlock()
	obj := &kustomizev1.Kustomization{}
	obj.Namespace, obj.Name = key.Namespace, key.Name
	rr.events <- event.GenericEvent{Object: obj}
}

// Reset drops every record: the feed's connection ended, and what it
// delivered may be withdrawn while none is up; the next connection's
// snapshot brings back what is still pending.
func (rr *RenderRecords) Reset() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.byKey = nil
}

// Source queues the object of each record handed to Handle.
func (rr *RenderRecords) Source() source.Source {
	return source.Channel(rr.events, &handler.EnqueueRequestForObject{})
}

// keeps says whether a record of key is kept.
func (rr *RenderRecords) keeps(key types.NamespacedName) bool {
	if rr == nil {
		return false
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	_, ok := rr.byKey[key]
	return ok
}

// forget drops the object's record: it is gone or another shard's.
func (rr *RenderRecords) forget(key types.NamespacedName) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	delete(rr.byKey, key)
	delete(rr.carried, key)
}

// adopt puts the object's record into obj's status, as render-controller
// would have written it, when the record is of obj's UID and generation
// and obj's status — as stored: read from the cache or the API server,
// never one a run put a record into already — does not have a render of
// that generation yet (or has another one than the record's, a newer
// revision of the same generation, or a failure written before the
// render) and that status is one the record replaces (Replaces, or the
// render this controller wrote from an earlier record); it returns the
// adoption and whether it did. A record of another UID or of an older
// generation is dropped with one log line, and so is one over a status
// it does not replace (render-controller's write after the offer, its
// withdrawal still on its way); one of a newer generation waits for the
// cache to catch up; one that status already has is dropped. Any other
// record stays until a status
// write carried it (taken), render-controller withdrew it, or a
// conflict showed it stale: a failed write loses none.
func (rr *RenderRecords) adopt(key types.NamespacedName, obj reconcile.Object) (adoption, bool) {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if rr == nil || !ok {
		return adoption{}, false
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rec, ok := rr.byKey[key]
	if !ok {
		return adoption{}, false
	}
	switch {
	case rec.UID != ks.UID:
		delete(rr.byKey, key)
		rr.Log.Info("dropping a render record of another object of the same name", "object", key, "recordUID", rec.UID, "uid", ks.UID)
		return adoption{}, false
	case rec.Generation < ks.Generation:
		delete(rr.byKey, key)
		rr.Log.Info("dropping a render record of an older generation", "object", key, "recordGeneration", rec.Generation, "generation", ks.Generation)
		return adoption{}, false
	case rec.Generation > ks.Generation:
		return adoption{}, false // the cache has not caught up with the spec yet
	}
	// A record still kept is newer than any render status
	// render-controller wrote of the object before it offered it: each of
	// its writes withdraws the record first (a failure written while a
	// sync of the record runs makes the sync's status write conflict,
	// which drops the record: statusWriter).
	stored := renderStatusOf(ks).digest()
	if stored == rec.status().digest() {
		delete(rr.byKey, key) // taken
		return adoption{}, false
	}
	// Over a render status render-controller wrote after the record's
	// offer it is not: that write withdrew the record, and the withdrawal
	// is still on its way. The record names the statuses it is newer than
	// (Replaces); the render this controller wrote from an earlier record
	// is one too, as no write of render-controller's came after it.
	if c, ok := rr.carried[key]; !rec.ReplacesStatus(stored) && (!ok || c.uid != ks.UID || c.digest != stored) {
		delete(rr.byKey, key)
		rr.Log.Info("dropping a render record: render-controller wrote the render status since it offered it", "object", key,
			"generation", rec.Generation, "revision", rec.Artifact.Revision)
		return adoption{}, false
	}
	ks.Status.RenderedArtifact = rec.Artifact.DeepCopy()
	conditions.MarkTrue(ks, kustomizev1.RenderedCondition, kustomizev1.RenderSucceededReason, "%s", rec.Message)
	return adoption{seq: rec.seq}, true
}

// stale drops the record a run adopted when its status write found a
// render status render-controller wrote after the run read the object:
// render-controller withdraws a record before each write of its own, so
// the record is older than that write (the withdrawal may still be on
// its way). A record handed on since the run adopted its own is newer
// and stays.
func (rr *RenderRecords) stale(key types.NamespacedName, a adoption) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rec, ok := rr.byKey[key]; ok && rec.seq == a.seq {
		delete(rr.byKey, key)
		rr.Log.Info("dropping a render record: render-controller wrote the render status since the sync read it", "object", key,
			"generation", rec.Generation, "revision", rec.Artifact.Revision)
	}
}

// wrote records that this controller wrote the render status rs to the
// status of the object key, of UID uid.
func (rr *RenderRecords) wrote(key types.NamespacedName, uid types.UID, rs *renderStatus) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.carried == nil {
		rr.carried = map[types.NamespacedName]carriedRender{}
	}
	rr.carried[key] = carriedRender{uid: uid, digest: rs.digest()}
}

// taken drops the object's record once a status write carried its render
// of digest: the render is in status, and a later write of
// render-controller's (a failure) must not find it here to take again.
func (rr *RenderRecords) taken(key types.NamespacedName, digest string) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rec, ok := rr.byKey[key]; ok && rec.Artifact != nil && rec.Artifact.Digest == digest {
		delete(rr.byKey, key)
	}
}

// ownWrite says whether obj's render is one this controller wrote itself.
func (rr *RenderRecords) ownWrite(obj reconcile.Object) bool {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if rr == nil || !ok || ks.Status.RenderedArtifact == nil {
		return false
	}
	digest := renderStatusOf(ks).digest()
	rr.mu.Lock()
	defer rr.mu.Unlock()
	c, ok := rr.carried[types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}]
	return ok && c.uid == ks.UID && c.digest == digest
}

// renderStatus is the part of a Kustomization's status that
// render-controller writes, which sync-controller's status writes carry
// (statusWriter): once plumb-sync has applied these fields, every apply
// of it must send them again, or server-side apply would remove them.
type renderStatus struct {
	Artifact *meta.Artifact
	Rendered *metav1.Condition
}

// renderStatusOf is obj's renderStatus; nil for a kind whose render
// status sync-controller does not carry (a HelmRelease) or when there is
// none.
func renderStatusOf(obj reconcile.Object) *renderStatus {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return nil
	}
	rs := &renderStatus{Artifact: ks.Status.RenderedArtifact.DeepCopy()}
	if c := conditions.Get(ks, kustomizev1.RenderedCondition); c != nil {
		rs.Rendered = c.DeepCopy()
	}
	if rs.Artifact == nil && rs.Rendered == nil {
		return nil
	}
	return rs
}

// digest is rs's identity, renderfeed.StatusDigest: the one comparison
// of render statuses, which render-controller's records name too. nil
// (no render status) has one as well.
func (rs *renderStatus) digest() string {
	if rs == nil {
		return renderfeed.StatusDigest(nil, nil)
	}
	return renderfeed.StatusDigest(rs.Artifact, rs.Rendered)
}

// sameRenderStatus says whether a and b are the same render status: the
// same artifact (digest, revision, URL) and the same Rendered condition
// (status, reason, message, observedGeneration). Times are left out: a
// condition a run set holds nanoseconds, the one the API server stores
// the same instant in seconds, and a status write for that difference
// alone would change nothing a reader uses. It decides both whether a
// status write carries a changed render (statusWriter.next) and whether
// a conflict was a write of the render (applyCarryingRender).
func sameRenderStatus(a, b *renderStatus) bool {
	return a.digest() == b.digest()
}

// status is the render status the record puts into its object (adopt).
func (rec *keptRecord) status() *renderStatus {
	return &renderStatus{Artifact: rec.Artifact, Rendered: &metav1.Condition{
		Type: kustomizev1.RenderedCondition, Status: metav1.ConditionTrue, Reason: kustomizev1.RenderSucceededReason,
		Message: rec.Message, ObservedGeneration: rec.Generation,
	}}
}
