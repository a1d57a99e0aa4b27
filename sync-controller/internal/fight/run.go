package fight

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/sync-controller/internal/engine"
)

// Run is the fights of one sync run of one owner: its guard, and the
// fights it saw end. A nil Run is a run without fight detection: it holds
// nothing back and reports no fight.
type Run struct {
	guard guard
	ended []ended
}

// Start returns the fights of a run of owner at generation, whose
// interval bounds the backoff; nil when fight detection is off.
func (t *Tracker) Start(opts Options, owner types.NamespacedName, generation int64, interval time.Duration) *Run {
	if opts.Window <= 0 {
		return nil
	}
	first := opts.FirstBackoff
	if first <= 0 {
		first = defaultFirstBackoff
	}
	return &Run{guard: guard{t: t, opts: Options{Window: opts.Window, FirstBackoff: first},
		owner: owner, generation: generation, maxBackoff: max(interval, first), now: time.Now}}
}

// Guard is the run's guard as the engine takes it: a nil interface
// without fight detection.
func (r *Run) Guard() engine.DriftGuard {
	if r == nil {
		return nil
	}
	return r.guard
}

// Record updates the fights after the engine acted on an object (hash is
// the desired state it applied) and returns whether the object is
// contested: its corrections are reported once per fight (Report), not as
// ordinary drift.
func (r *Run) Record(res engine.Result, hash string) bool {
	if r == nil {
		return false
	}
	contested, over := r.guard.record(res, hash)
	r.ended = append(r.ended, over...)
	return contested
}

// Requeue brings the next reconcile forward to when a fight needs one.
func (r *Run) Requeue(result ctrl.Result) ctrl.Result {
	if r == nil {
		return result
	}
	if d := r.guard.due(); d > 0 && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
		result.RequeueAfter = d
	}
	return result
}

// Reporting is what Report needs of the run: where its events go, and a
// reader for the autoscaler that may be the other writer.
type Reporting struct {
	Events   *events.Recorder
	Object   client.Object
	Revision string
	// IgnoreField names the ignore rules of the owner's kind, for the fix
	// the messages suggest.
	IgnoreField string
	// Reader lists HorizontalPodAutoscalers, uncached.
	Reader client.Reader
}

// Report returns the owner's fights, as status.drift.contested shows
// them, and records one DriftContested event when a fight starts and one
// DriftContestEnded event when it ends — never one per revert.
func (r *Run) Report(ctx context.Context, to Reporting) []kustomizev1.ContestedDrift {
	if r == nil {
		return nil
	}
	all, started := r.guard.contests()
	for _, k := range started {
		if c := r.controllerOf(ctx, to.Reader, k); c != "" {
			r.guard.setController(k, c)
		}
	}
	if len(started) > 0 {
		all, _ = r.guard.contests()
	}
	for _, k := range started {
		for _, c := range all {
			if c.Object == k.id.String() && c.Manager == k.manager {
				to.Events.Record(to.Object, events.SeverityError, kustomizev1.DriftContestedReason, Message(c, to.IgnoreField),
					events.WithRevision(to.Revision), events.WithMetadata(map[string]string{
						"object": c.Object, "fields": strings.Join(c.Fields, ","), "manager": c.Manager, "controller": c.Controller}))
			}
		}
	}
	for _, e := range r.ended {
		if !e.f.announced {
			continue
		}
		c := contestedDrift(e.key, e.f)
		to.Events.Record(to.Object, events.SeverityInfo, kustomizev1.DriftContestEndedReason,
			fmt.Sprintf("%s: the fight over %s with field manager %s is over after %d correction(s): %s",
				c.Object, strings.Join(c.Fields, ", "), managerName(c.Manager), c.Reverts, e.why),
			events.WithRevision(to.Revision), events.WithMetadata(map[string]string{
				"object": c.Object, "fields": strings.Join(c.Fields, ","), "manager": c.Manager, "reverts": strconv.Itoa(c.Reverts)}))
	}
	return all
}

// scaledKinds are the kinds a HorizontalPodAutoscaler commonly scales
// through spec.replicas.
var scaledKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true}

// controllerOf names a known controller that writes a fight's fields: a
// HorizontalPodAutoscaler whose scaleTargetRef is the object, when the
// fields include spec.replicas. One LIST of the namespace's autoscalers,
// uncached, when a fight starts — never on a resync.
func (r *Run) controllerOf(ctx context.Context, reader client.Reader, k key) string {
	if k.id.Group != "apps" || !scaledKinds[k.id.Kind] {
		return ""
	}
	if !slices.Contains(r.guard.fields(k), "spec.replicas") {
		return ""
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("autoscaling/v2")
	list.SetKind("HorizontalPodAutoscalerList")
	if err := reader.List(ctx, list, client.InNamespace(k.id.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "looking for the HorizontalPodAutoscaler of a contested object", "object", k.id.String())
		return ""
	}
	for _, hpa := range list.Items {
		kind, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "name")
		if kind == k.id.Kind && name == k.id.Name {
			return "HorizontalPodAutoscaler/" + hpa.GetNamespace() + "/" + hpa.GetName()
		}
	}
	return ""
}
