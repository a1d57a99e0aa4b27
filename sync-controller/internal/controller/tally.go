package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/sync-controller/internal/engine"
)

// tally is what a run's applies did: the objects they left in the cluster
// and what they found and changed there, which the health waits, the
// progress, the inventory, the Applied and drift events and the metrics
// read. A run's prune reports itself (syncRun.prune).
type tally struct {
	// applied are the objects the run applied, checked or created (hooks)
	// as the API server returned them: the health waits judge them.
	applied map[object.ID]*unstructured.Unstructured
	// counts are the applies by what they did to the object.
	counts map[diff.Action]int
	// written counts the applies that wrote, drifted the ones that found
	// the object changed by someone else; neither counts a contested
	// field's correction, which is reported once per fight (internal/fight).
	written int
	drifted []engine.Result
	// created are the objects the applies created, as returned
	// (cleanupOnFail deletes them after a failed upgrade).
	created []*unstructured.Unstructured
	// changes name what the writes counted in written did, in the order
	// they were applied: "ConfigMap/apps/settings created", as Flux's
	// change set names them, for the Applied event.
	changes []string
}

func newTally() tally {
	return tally{applied: map[object.ID]*unstructured.Unstructured{}, counts: map[diff.Action]int{}}
}

// add counts the result of one apply; contested says that it was a
// correction of a contested field (fight.Run.Record).
func (t *tally) add(res engine.Result, contested bool) {
	t.counts[res.Action]++
	if res.Object != nil {
		t.applied[res.ID] = res.Object
	}
	if res.Written && !contested {
		t.written++
		t.changes = append(t.changes, res.ID.String()+" "+strings.ToLower(string(res.Action)))
	}
	if res.Action == diff.Created && res.Written && res.Object != nil {
		t.created = append(t.created, res.Object)
	}
	if res.Drift && !contested && !res.Held {
		t.drifted = append(t.drifted, res)
	}
}

// appliedOf are those of objs that exist now: applied or checked by the
// run.
func (t *tally) appliedOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if _, ok := t.applied[object.IDOf(o)]; ok {
			out = append(out, o)
		}
	}
	return out
}

// appliedChangesMax bounds the objects an Applied event names; the counts
// before them say how many there were.
const appliedChangesMax = 10

// appliedEvent is the message and the metadata of the Applied event of a
// run that applied revision: the one Kubernetes Event of a first sync, so
// it names the revision, the counts and the first appliedChangesMax
// objects the run wrote, as Flux's change set event does
// (docs/design/events.md).
func (t *tally) appliedEvent(revision string) (string, map[string]string) {
	created, configured, unchanged := t.counts[diff.Created], t.counts[diff.Configured], t.counts[diff.Unchanged]
	msg := fmt.Sprintf("revision %s: %d created, %d configured, %d unchanged", revision, created, configured, unchanged)
	if len(t.changes) > 0 {
		msg += ": " + strings.Join(message.Names(t.changes, appliedChangesMax), ", ")
	}
	return msg,
		map[string]string{
			"created":    fmt.Sprint(created),
			"configured": fmt.Sprint(configured),
			"unchanged":  fmt.Sprint(unchanged),
		}
}
