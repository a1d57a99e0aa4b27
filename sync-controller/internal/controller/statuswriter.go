package controller

import (
	"context"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/reconcile"
)

// statusWriter writes one run's status: sync-controller's part of the
// object's status, by server-side apply, and only what changed. It owns
// what the API server has of that part (stored, storedInv, storedConds),
// to tell what changed, and the write the run holds back (hold), which a
// timer may send; mu keeps that write and the run's own in order.
type statusWriter struct {
	r   *Syncer
	key types.NamespacedName
	// obj is the object as read, which the run's goroutine reads (its
	// events, its copies) while a held write's timer may send: no write
	// changes it.
	obj reconcile.Object
	// storedAt names the object for the writes (its kind, namespace,
	// name and uid) and holds the resourceVersion it is stored at after
	// this writer's last write, the precondition of a write that carries
	// the render. Guarded by mu, as the timer writes it.
	storedAt reconcile.Object
	// out holds the status as it will be written (the run's), outApp its
	// adapter; each write puts the run's sync status into it first.
	out    reconcile.Object
	outApp application
	// start is when the run started: hold waits until it has lasted
	// progressEvery.
	start time.Time
	// lasting is set once the run knows it can last by its own work
	// (syncRun.mayLast): until then a held write waits for a later write
	// of the run to carry it, on no timer.
	lasting bool

	// stored is sync-controller's part of the status as the API server has
	// it (ownStatus, and the inventory), so that a write sends only what
	// changed.
	stored      any
	storedInv   *kustomizev1.Inventory
	storedConds []metav1.Condition
	// storedRender is render-controller's part of the status as the API
	// server has it (renderStatusOf): each write of plumb-sync carries the
	// object's render status, and applies only while the API server still
	// has storedRender (carryRender).
	storedRender *renderStatus
	// adopted is the feed's record the run put into obj (RenderRecords),
	// the zero adoption when none.
	adopted adoption
	// mu serializes the run's status writes with the one it holds back
	// (hold), which a timer may send; held is that write, nil when none
	// waits.
	mu   sync.Mutex
	held *heldWrite
}

// newStatusWriter returns the status writer of a run of obj (app its
// adapter) that builds its status in out, started at start.
func newStatusWriter(r *Syncer, obj reconcile.Object, app application, out reconcile.Object, start time.Time) *statusWriter {
	storedAt := app.newEmpty().object()
	storedAt.SetNamespace(obj.GetNamespace())
	storedAt.SetName(obj.GetName())
	storedAt.SetUID(obj.GetUID())
	storedAt.SetResourceVersion(obj.GetResourceVersion())
	return &statusWriter{
		r: r, key: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()},
		obj: obj, storedAt: storedAt, out: out, outApp: appOf(out), start: start,
		stored: app.ownStatus(), storedInv: app.syncStatus().Inventory,
		storedConds: sortedOwnConditions(obj.GetConditions()), storedRender: renderStatusOf(obj),
	}
}

// Field managers of sync-controller's status writes. A large inventory has
// its own: it is the one large field (an entry per object) and rarely
// changes, and a server-side apply that leaves it out costs the API server
// far less than one that carries it (docs/bench/sync.md). A small one
// travels with the rest under plumb-sync, so that a sync which changes
// both (every first sync, every change of the set) is one apply, not two.
var (
	statusManager    = manage.FieldManager
	inventoryManager = kinds.FieldManager(kinds.SyncController, "inventory")
)

// inventoryAlongMax is the most entries an inventory may have to be
// written with the rest of the status, in every write of it: at that size
// (a few KiB) carrying it costs the API server less than a request of its
// own, which a large inventory needs only when it changes. The rule is a
// function of the inventory alone, so an inventory changes manager only
// when it changes: growing past the bound, it is applied first under
// plumb-sync-inventory (taking it from plumb-sync) and then left out of
// plumb-sync's writes; shrinking under it, plumb-sync takes it back.
const inventoryAlongMax = 100

// inventoryAlong reports whether inv is written with the rest of the
// status, under plumb-sync.
func inventoryAlong(inv *kustomizev1.Inventory) bool {
	return inv == nil || len(inv.Entries) <= inventoryAlongMax
}

// write server-side-applies sync-controller's status fields, out with the
// sync status st, that changed since the object was read (or last written
// by this run), as one apply under plumb-sync with a small inventory
// (inventoryAlong), or as two with a large one that changed: the inventory
// under its own field manager, then the rest. A run that changed nothing
// writes nothing. Condition messages are cut to message.MaxBytes first
// (reconcile.BoundConditions), so a long one that did not change is no
// change. A write the run held back (hold) is dropped: this one carries
// what it had, and more.
func (w *statusWriter) write(ctx context.Context, st syncStatus) error {
	return w.writeOrHold(ctx, st, false)
}

// hold writes the run's progress — a new generation's Reconciling mark,
// the first step of a sync — only when the run can last by its own work
// (lasting) and once it has lasted progressEvery: at once when it has,
// else from a timer, unless a write of the run comes first and carries it.
// A run that cannot last (a fleet's Kustomization of a few objects in one
// wave, nothing to wait for) ends with its outcome as its one write,
// however slow the API server makes it: no reader could have told the
// progress from the outcome, and every reader that matters compares
// observedGeneration with the generation anyway
// (docs/design/anatomy-of-a-controller.md). The held write is computed
// now, from the run's status as it is: what the timer sends is a state the
// run really was in, and mu keeps it from landing after a later write.
func (w *statusWriter) hold(ctx context.Context, st syncStatus) error {
	return w.writeOrHold(ctx, st, true)
}

// mayLast tells the writer that the run can last by its own work: the
// write it holds back (hold), and each it holds after, goes out once the
// run has lasted progressEvery.
func (w *statusWriter) mayLast(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lasting = true
	h := w.held
	if h == nil || h.timer != nil {
		return nil
	}
	w.held = nil
	return w.holdOrSend(ctx, h.write)
}

// writeOrHold is write, or hold when held. Called without mu.
func (w *statusWriter) writeOrHold(ctx context.Context, st syncStatus, held bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropHeld()
	next, err := w.next(st)
	if err != nil || next == nil {
		return err
	}
	if !held {
		return w.send(ctx, next)
	}
	return w.holdOrSend(ctx, next)
}

// holdOrSend holds sw back while the run is not known to last (for a
// later write to carry), sends it when the run has lasted progressEvery,
// and else arms the timer that sends it then. Called with mu held.
func (w *statusWriter) holdOrSend(ctx context.Context, sw *statusWrite) error {
	if !w.lasting {
		w.held = &heldWrite{write: sw}
		return nil
	}
	wait := progressEvery - time.Since(w.start)
	if wait <= 0 {
		return w.send(ctx, sw)
	}
	w.held = w.holdWrite(ctx, sw, wait)
	return nil
}

// end drops what the run still holds back when it ends: its final write
// carried it, and none is left after an error.
func (w *statusWriter) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropHeld()
}

// statusWrite is the requests of one status write, computed from the
// run's status against what the API server has (next), and what it has
// once they are sent.
type statusWrite struct {
	// inventory is applied first, as plumb-sync-inventory; status then, as
	// plumb-sync. nil: not sent.
	inventory, status map[string]any
	own               any
	inv               *kustomizev1.Inventory
	conds             []metav1.Condition
	render            *renderStatus
}

// next computes the next status write from out and st, nil when nothing
// changed. Called with mu held, on the run's goroutine (it writes st into
// out and bounds its conditions).
func (w *statusWriter) next(st syncStatus) (*statusWrite, error) {
	w.outApp.setSyncStatus(st)
	reconcile.BoundConditions(w.out, w.storedConds)
	sw := &statusWrite{own: w.outApp.ownStatus(), inv: st.Inventory.DeepCopy(), conds: sortedOwnConditions(w.out.GetConditions()),
		render: renderStatusOf(w.obj)}
	along := inventoryAlong(sw.inv)
	invChanged := !apiequality.Semantic.DeepEqual(sw.inv, w.storedInv)
	renderChanged := !sameRenderStatus(sw.render, w.storedRender)
	if invChanged && !along {
		inv, err := reconcile.ToStatusMap(&inventoryStatus{Inventory: sw.inv})
		if err != nil {
			return nil, err
		}
		sw.inventory = inv
	}
	if (!invChanged || !along) && !renderChanged && apiequality.Semantic.DeepEqual(sw.own, w.stored) {
		if sw.inventory == nil {
			return nil, nil
		}
		return sw, nil
	}
	status, err := reconcile.ToStatusMap(sw.own)
	if err != nil {
		return nil, err
	}
	// Always send the conditions we own, even none, so a condition we
	// dropped is removed rather than left behind.
	if _, ok := status["conditions"]; !ok {
		status["conditions"] = []any{}
	}
	if along && sw.inv != nil {
		// plumb-sync owns a small inventory: every one of its writes
		// carries it, or the API server would drop it.
		inv, err := reconcile.ToStatusMap(sw.inv)
		if err != nil {
			return nil, err
		}
		status["inventory"] = inv
	}
	if err := carryRender(status, sw.render); err != nil {
		return nil, err
	}
	sw.status = status
	return sw, nil
}

// carryRender adds render-controller's part of a Kustomization's status
// to a status write of plumb-sync: the render a sync took from the feed
// (RenderRecords), or the one stored, which plumb-sync may own since it
// wrote it (server-side apply removes a field its only manager leaves
// out). The apply then has the object's resourceVersion as its
// precondition (send), so it never carries an older render over one
// render-controller wrote since.
func carryRender(status map[string]any, rs *renderStatus) error {
	if rs == nil {
		return nil
	}
	if rs.Artifact != nil {
		a, err := reconcile.ToStatusMap(rs.Artifact)
		if err != nil {
			return err
		}
		status["renderedArtifact"] = a
	}
	if rs.Rendered != nil {
		c, err := reconcile.ToStatusMap(rs.Rendered)
		if err != nil {
			return err
		}
		conds, _ := status["conditions"].([]any)
		status["conditions"] = append(conds, c)
	}
	return nil
}

// send applies sw and records what the API server has now. Called with mu
// held.
func (w *statusWriter) send(ctx context.Context, sw *statusWrite) error {
	if sw.inventory != nil {
		if err := w.apply(ctx, inventoryManager, sw.inventory, false); err != nil {
			return err
		}
		w.storedInv = sw.inv
	}
	if sw.status == nil {
		return nil
	}
	if sw.render == nil {
		if err := w.apply(ctx, statusManager, sw.status, false); err != nil {
			return err
		}
	} else {
		if sw.render.Artifact != nil {
			// Before the apply: its watch event may come before its
			// response.
			w.r.Renders.wrote(w.key, w.storedAt.GetUID(), sw.render)
		}
		if err := w.applyCarryingRender(ctx, sw.status); err != nil {
			return err
		}
		if sw.render.Artifact != nil {
			w.r.Renders.taken(w.key, sw.render.Artifact.Digest)
		}
	}
	w.stored, w.storedConds, w.storedInv, w.storedRender = sw.own, sw.conds, sw.inv, sw.render
	return nil
}

// conflictRetries is how many times a status write carrying the render
// is sent again after a conflict with a write that left the render alone.
const conflictRetries = 3

// applyCarryingRender applies status, which carries the render, with the
// object's resourceVersion as the precondition. On a conflict the object
// is read again from the API server (not the cache, which may still hold
// the version that conflicted). A conflict with a write that left the
// render status as this run knows it (storedRender) — a spec edit, an
// annotation, a label, the sync's own apply of a Kustomization that
// manages itself — is no reason to give up: the write is sent again at
// the version read. A conflict with a write that changed it
// (render-controller's failure, or its render of a feed record no
// sync-controller took in time) is returned, and the record the run
// adopted is dropped as older than that write (RenderRecords.stale): the
// reconcile is retried and decides again from what is stored. A conflict
// that outlasts the retries leaves the record for the next reconcile.
func (w *statusWriter) applyCarryingRender(ctx context.Context, status map[string]any) error {
	for attempt := 0; ; attempt++ {
		err := w.apply(ctx, statusManager, status, true)
		if !apierrors.IsConflict(err) || attempt == conflictRetries {
			return err
		}
		fresh := appOf(w.storedAt).newEmpty().object()
		if gerr := w.r.reader().Get(ctx, w.key, fresh); gerr != nil {
			return err
		}
		if !sameRenderStatus(renderStatusOf(fresh), w.storedRender) {
			w.r.Renders.stale(w.key, w.adopted)
			return err
		}
		w.storedAt.SetResourceVersion(fresh.GetResourceVersion())
	}
}

// apply applies status as fieldManager, telling the Syncer's ownWrites (a
// write's response carries the version it is stored at); at makes the
// object's resourceVersion the apply's precondition (applyCarryingRender).
func (w *statusWriter) apply(ctx context.Context, fieldManager string, status map[string]any, at bool) error {
	w.r.writes.writing(w.key)
	applyStatus := reconcile.ApplyStatus
	if at {
		applyStatus = reconcile.ApplyStatusAt
	}
	err := applyStatus(ctx, w.r.Client, w.storedAt, fieldManager, status)
	rv := ""
	if err == nil {
		rv = w.storedAt.GetResourceVersion()
	}
	w.r.writes.wrote(w.key, rv)
	return err
}

// inventoryStatus is the status the inventory's field manager writes.
type inventoryStatus struct {
	Inventory *kustomizev1.Inventory `json:"inventory,omitempty"`
}

// heldWrite is a status write held back until the run has lasted
// progressEvery (timer), or, while the run is not known to last, until a
// later write carries it (timer nil).
type heldWrite struct {
	write *statusWrite
	timer *time.Timer
}

// holdWrite arms the timer that sends sw after wait, unless the run has
// dropped it by then. Called with mu held.
func (w *statusWriter) holdWrite(ctx context.Context, sw *statusWrite, wait time.Duration) *heldWrite {
	// Not ctx's cancellation: the step that holds the write may end (its
	// context with it) before the run does, and the run drops what it
	// still holds when it ends (reconcileObject).
	ctx = context.WithoutCancel(ctx)
	h := &heldWrite{write: sw}
	h.timer = time.AfterFunc(wait, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.held != h {
			return // a later write carried it
		}
		w.held = nil
		if err := w.send(ctx, sw); err != nil {
			// The run's next write sends it again: what is stored did
			// not change.
			ctrl.LoggerFrom(ctx).Error(err, "writing the sync's progress")
		}
	})
	return h
}

// dropHeld drops the held write, if any. Called with mu held.
func (w *statusWriter) dropHeld() {
	if w.held != nil && w.held.timer != nil {
		w.held.timer.Stop()
	}
	w.held = nil
}
