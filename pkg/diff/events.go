package diff

import (
	"fmt"

	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
)

// MaxValueLen bounds Before and After of an event change, in bytes, marker
// included (message.TruncateTo): a drifted field can hold a whole ConfigMap
// file, and an event stays small.
const MaxValueLen = 1024

// ToEvents converts changes of the object id (see ObjectID) to event
// changes, shortening values longer than MaxValueLen.
func ToEvents(object string, changes []Change) []events.Change {
	out := make([]events.Change, len(changes))
	for i, c := range changes {
		out[i] = events.Change{Object: object, Path: c.Path, Before: message.TruncateTo(c.Before, MaxValueLen), After: message.TruncateTo(c.After, MaxValueLen)}
	}
	return out
}

// EventChanges converts the result's changes to event changes.
func (r Result) EventChanges() []events.Change { return ToEvents(r.Object, r.Changes) }

// Paths lists the result's changes as <object>:<path>, the form of the
// Kustomization's status.drift.paths.
func (r Result) Paths() []string {
	out := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = r.Object + ":" + c.Path
	}
	return out
}

// Truncate keeps the first max items; when it drops some, note says
// "and N more" for a message, otherwise note is empty. max < 0 counts as 0.
func Truncate[T any](items []T, max int) (kept []T, note string) {
	if max < 0 {
		max = 0
	}
	if len(items) <= max {
		return items, ""
	}
	n := len(items) - max
	if n == 1 {
		return items[:max], "and 1 more change"
	}
	return items[:max], fmt.Sprintf("and %d more changes", n)
}
