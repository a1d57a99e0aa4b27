package events

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// maxDroppedReasons bounds how many distinct reasons the report of dropped
// events names (the first seen); the rest are summed as "other".
const maxDroppedReasons = 10

// droppedEvents counts the events a full queue dropped since the last
// report, by reason, so that an outage costs one log line however many
// events it lost.
type droppedEvents struct {
	total    int
	byReason map[string]int
	other    int
}

func (d *droppedEvents) add(reason string) {
	d.total++
	if _, ok := d.byReason[reason]; !ok && len(d.byReason) >= maxDroppedReasons {
		d.other++
		return
	}
	if d.byReason == nil {
		d.byReason = map[string]int{}
	}
	d.byReason[reason]++
}

// String names the dropped events by reason, the most frequent first:
// "DriftCorrected: 12, Progressing: 3".
func (d *droppedEvents) String() string {
	reasons := make([]string, 0, len(d.byReason))
	for r := range d.byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := reasons[i], reasons[j]
		if d.byReason[a] != d.byReason[b] {
			return d.byReason[a] > d.byReason[b]
		}
		return a < b
	})
	parts := make([]string, 0, len(reasons)+1)
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s: %d", r, d.byReason[r]))
	}
	if d.other > 0 {
		parts = append(parts, fmt.Sprintf("other: %d", d.other))
	}
	return strings.Join(parts, ", ")
}

// reportDropped logs, in one line, the events the full queue dropped since
// the last report, and reports whether there were any. Each was already
// counted in plumb_events_dropped_total when it was dropped.
func (p *JetStreamPublisher) reportDropped() bool {
	p.mu.Lock()
	d := p.dropped
	p.dropped = droppedEvents{}
	p.mu.Unlock()
	if d.total == 0 {
		return false
	}
	p.log.Error(errors.New("event queue full"), "events were dropped while NATS could not take them; raise --events-queue-size to hold a longer outage",
		"dropped", d.total, "reasons", d.String(), "queueSize", p.opts.QueueSize)
	return true
}
