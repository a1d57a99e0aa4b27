package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/syncwindow"
)

// windowHold is what the sync-window step decided for a run that is
// outside its windows (nil: inside them, or none): the revision it holds
// back, the artifact applied instead (the render synced last, so that
// drift is still corrected or reported), and the message Ready gives.
type windowHold struct {
	held     string
	artifact *meta.Artifact
	message  string
	until    time.Duration
	// rollback: the render held back is a rollback's (hold.go), which
	// then waits too.
	rollback bool
}

// nextSync is the render a run would apply when no sync window held it
// (see "How the holds combine" in docs/design/sync-engine.md): a
// rollback's while plumb.dev/rollback asks for one (and follow-git has
// not ended it), else the newest. asked says a person asked for it — a
// rollback not synced yet, or a manual sync requested and not handled —
// which a window lets through when it allows manual syncs.
type nextSync struct {
	digest, revision string
	asked, rollback  bool
}

// nextRender is nextSync of this run; rendered is the newest render (nil:
// none yet).
func (s *syncRun) nextRender(rendered *meta.Artifact) nextSync {
	if rendered == nil {
		return nextSync{}
	}
	if r := askedRollback(s.obj); r.digest != "" && !r.endedBy(rendered) {
		revision, _, _ := historyEntry(s.obj, r.digest)
		synced := lastSynced(s.obj)
		return nextSync{digest: r.digest, revision: revision, rollback: true, asked: synced == nil || synced.Digest != r.digest}
	}
	token := s.obj.GetAnnotations()[kustomizev1.SyncRequestAnnotation]
	asked := s.spec.Manual && token != "" && token != s.app.manualSync().LastHandledSyncAt
	return nextSync{digest: rendered.Digest, revision: rendered.Revision, asked: asked}
}

// now is the Syncer's clock: Clock, else the wall clock.
func (r *Syncer) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

// syncWindows returns obj's windows, parsed: its own spec.syncWindows and
// those of the SyncWindowPolicies of its namespace whose selector matches
// its labels (read from the cache). The error names each window that does
// not parse.
func (r *Syncer) syncWindows(ctx context.Context, obj client.Object) ([]syncwindow.Window, error) {
	var own []kustomizev1.SyncWindow
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		own = o.Spec.SyncWindows
	case *helmv2.HelmRelease:
		own = o.Spec.SyncWindows
	}
	windows, err := syncwindow.ParseAll("spec.syncWindows", own)
	if err != nil {
		return nil, err
	}
	var policies kustomizev1.SyncWindowPolicyList
	if err := r.Client.List(ctx, &policies, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing SyncWindowPolicies: %w", err)
	}
	for _, p := range policies.Items {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("SyncWindowPolicy/%s: spec.selector: %w", p.Name, err)
		}
		if !sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		ws, err := syncwindow.ParseAll(kustomizev1.SyncWindowPolicyKind+"/"+p.Name+".spec.windows", p.Spec.Windows)
		if err != nil {
			return nil, err
		}
		windows = append(windows, ws...)
	}
	return windows, nil
}

// gateSyncWindow holds a new render while the object is outside its sync
// windows (a deny window active, or allow windows and none active;
// pkg/syncwindow): it is not applied until they open. The run applies the
// render synced last instead, so that drift is still corrected — or only
// reported when a window says driftCorrection: false: a Kustomization's
// newest history entry, a HelmRelease's deployed release (as a drift
// correction only, heldRelease in remediation.go: no release, no hook, no
// history entry). An object that never synced, and a HelmRelease whose
// newest release is not deployed, stop here with nothing applied. A
// render already synced is not held: drift correction goes on as usual,
// or is only reported when a window says driftCorrection: false. Sets
// status.syncWindow while outside the windows; holdForSyncWindow, after
// the sync, makes Ready=False reason OutsideSyncWindow with the held
// revision and when the windows open, and comes back then. A person's
// request (nextRender: a rollback not applied yet, a Manual object's sync
// token) goes through when the windows let manual syncs through, else
// waits, held as a new render is; a Manual object without a request is
// left to manualSync. A window that does not parse stalls the object
// (Stalled=True, reason SyncWindowInvalid) until its spec or the policy
// changes.
func (s *syncRun) gateSyncWindow(ctx context.Context) error {
	setStatus := func(st *kustomizev1.SyncWindowStatus) {
		switch o := s.out.(type) {
		case *kustomizev1.Kustomization:
			o.Status.SyncWindow = st
		case *helmv2.HelmRelease:
			o.Status.SyncWindow = st
		}
	}
	windows, err := s.r.syncWindows(ctx, s.obj)
	if err != nil {
		return reconcile.Stalled(kustomizev1.SyncWindowInvalidReason, err)
	}
	now := s.r.now()
	st := syncwindow.Evaluate(windows, now)
	if st.Open {
		setStatus(nil)
		return nil
	}
	status := &kustomizev1.SyncWindowStatus{Windows: st.Names(), DriftCorrection: st.DriftCorrection()}
	if !st.NextOpen.IsZero() {
		t := metav1.NewTime(st.NextOpen)
		status.NextOpen = &t
	}
	setStatus(status)
	if !st.DriftCorrection() {
		s.spec.DriftPolicy = kustomizev1.DriftPolicyReport
	}
	rendered := s.app.rendered()
	synced := lastSynced(s.obj)
	next := s.nextRender(rendered)
	if next.digest == "" || (synced != nil && next.digest == synced.Digest) {
		return nil // nothing new: drift is corrected or reported as the windows say
	}
	if next.asked && st.ManualSyncAllowed() {
		return nil // a person's sync, which the windows let through
	}
	if s.spec.Manual && !next.asked {
		return nil // manualSync holds it, and reports it out of sync
	}
	status.HeldRevision = rendered.Revision
	hold := &windowHold{held: rendered.Revision, until: untilOpen(st, now, s.spec.Interval), rollback: next.rollback}
	if synced != nil && synced.live {
		// The render synced last, from the same folder of render-controller's
		// artifacts, which keeps it (the newest history entry's digest;
		// a HelmRelease's deployed release).
		hold.artifact = besideArtifact(rendered, synced.Digest, synced.Revision)
	}
	applied := "nothing is applied"
	if hold.artifact != nil {
		applied = "drift from revision " + synced.Revision + " " + s.heldDrift()
	}
	held := "revision " + rendered.Revision + " is"
	switch {
	case next.rollback:
		held = fmt.Sprintf("the rollback to revision %s (render %s) and revision %s are", next.revision, shortDigest(next.digest), rendered.Revision)
	case next.asked:
		held = fmt.Sprintf("the manual sync asked at %s of revision %s is", s.obj.GetAnnotations()[kustomizev1.SyncRequestAnnotation], rendered.Revision)
	}
	lets := ""
	if next.asked {
		lets = ", which lets no manual sync through,"
	}
	hold.message = fmt.Sprintf("%s held by sync window %s%s%s; %s", held,
		strings.Join(st.Names(), ", "), lets, untilText(st), applied)
	s.window = hold
	if hold.artifact == nil || s.spec.Manual {
		// A Manual object's request waits, not consumed, for the windows
		// to open; what the cluster runs is reported by the runs before.
		return reconcile.Waiting(kustomizev1.OutsideSyncWindowReason, hold.until, fmt.Errorf("%s", hold.message))
	}
	return nil
}

// heldDrift says, for the hold's message, what becomes of drift from the
// render synced last while the windows hold the newest: the run's drift
// policy, which a window with driftCorrection: false has made Report.
func (s *syncRun) heldDrift() string {
	if fate := s.spec.driftFate(true); fate != "corrected" {
		return "is " + fate
	}
	return "is still corrected"
}

// driftFate says what becomes of drift under the spec: the policy that
// decides, the first of drift detection disabled (a HelmRelease's
// driftDetection.mode: disabled), driftPolicy: Report (or mode: warn),
// syncPolicy: Manual (manualsync.go reports drift, as Report does), and
// an active window with driftCorrection: false (windowCorrects false).
func (sp *syncSpec) driftFate(windowCorrects bool) string {
	switch {
	case sp.DriftDisabled:
		return "neither corrected nor reported (drift detection is disabled)"
	case sp.DriftPolicy == kustomizev1.DriftPolicyReport || sp.Manual || !windowCorrects:
		return "reported, not corrected"
	}
	return "corrected"
}

// heldBack returns the artifact a run applies instead of the newest
// render while a sync window holds it, else artifact.
func (s *syncRun) heldBack(artifact *meta.Artifact) *meta.Artifact {
	if s.window != nil && s.window.artifact != nil {
		return s.window.artifact
	}
	return artifact
}

// holdForSyncWindow ends a run that applied the last synced render while a
// window holds the newest one: Ready=False, Reconciling=True, reason
// OutsideSyncWindow, naming the held revision, the windows and when they
// open; the reconcile comes back then.
func (s *syncRun) holdForSyncWindow(context.Context) error {
	if s.window == nil {
		return nil
	}
	return reconcile.Waiting(kustomizev1.OutsideSyncWindowReason, s.window.until, fmt.Errorf("%s", s.window.message))
}

// syncedRender is the render a sync operation last ran with. live says
// that a run held by a sync window applies it again to correct drift: a
// Kustomization's always, a HelmRelease's when it is the deployed release
// (a failed upgrade's render is applied again only by a retry, which the
// window holds too).
type syncedRender struct {
	Digest, Revision string
	live             bool
}

// lastSynced is the render of obj's newest sync operation (a
// Kustomization's newest history entry, a HelmRelease's newest release),
// nil when none was made.
func lastSynced(obj client.Object) *syncedRender {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		if len(o.Status.History) > 0 && o.Status.History[0].Digest != "" {
			h := o.Status.History[0]
			return &syncedRender{Digest: h.Digest, Revision: h.Metadata[meta.HistoryRevisionKey], live: true}
		}
	case *helmv2.HelmRelease:
		if len(o.Status.History) > 0 && o.Status.History[0].Digest != "" {
			h := o.Status.History[0]
			return &syncedRender{Digest: h.Digest, Revision: h.ChartVersion, live: h.Status == helmv2.ReleaseStatusDeployed}
		}
	}
	return nil
}

// untilOpen is how long until the windows open (a second after, so that
// the reconcile then finds them open), or interval when no opening was
// found.
func untilOpen(st syncwindow.State, now time.Time, interval time.Duration) time.Duration {
	if st.NextOpen.IsZero() {
		return interval
	}
	return st.NextOpen.Sub(now) + time.Second
}

// untilText is " until <time>" for a message, or that no window opens
// within a year.
func untilText(st syncwindow.State) string {
	if st.NextOpen.IsZero() {
		return " (no window opens within a year)"
	}
	return " until " + st.NextOpen.UTC().Format(time.RFC3339)
}

// windowPolicySelects maps a SyncWindowPolicy to the objects of list's
// kind in its namespace: all of them, not only those its selector matches
// now, so that one it stopped selecting is released too.
func (r *Syncer) windowPolicySelects(ctx context.Context, o client.Object, list client.ObjectList) []ctrl.Request {
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	_ = apimeta.EachListItem(list, func(item runtime.Object) error {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(item.(client.Object))})
		return nil
	})
	return reqs
}

// windowNote ends Ready's message while the object is outside its sync
// windows and they hold nothing (a hold makes Ready=False with its own
// message): the windows, until when, and what becomes of drift, as the
// object's own policy (spec, its syncSpec) and the windows decide.
func windowNote(st *kustomizev1.SyncWindowStatus, spec syncSpec) string {
	if st == nil {
		return ""
	}
	until := " (no window opens within a year)"
	if st.NextOpen != nil {
		until = " until " + st.NextOpen.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("; sync window %s is closed%s, drift is %s", strings.Join(st.Windows, ", "), until, spec.driftFate(st.DriftCorrection))
}
