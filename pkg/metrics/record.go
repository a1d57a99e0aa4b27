package metrics

import (
	"sync"
)

// objectKey names one object of a kind.
type objectKey struct{ namespace, name string }

// record is what an Object keeps of one object between scrapes: its
// values, and which of its series exist, since a series appears with the
// call that first sets it, as a vector's did (the condition's with
// Record, the size's with the first Record that has a size, the work
// counter's with the first Worked, the duration's with the first
// Observe). One record serves Plumb's series and Flux's.
type record struct {
	// namespace and name never change: the series' label values point
	// at them.
	namespace, name string

	mu sync.Mutex
	// recorded: Record was called, so the condition's and the
	// suspension's series exist (and the gotk_ gauges in a Toolkit set).
	recorded bool
	hasSize  bool
	// suspended, condition (1 True, 0 False, -1 Unknown) and size are
	// Plumb's gauges.
	suspended bool
	condition int8
	// ready is the index of the Ready condition's status in
	// conditionStatuses, noStatus for none of them.
	ready int8
	size  float64
	// work is the work counter, its series there from the first unit.
	work uint64
	// durations is gotk_reconcile_duration_seconds, nil until the
	// object's first Observe in a Toolkit set.
	durations *durations
}

// noStatus is a Ready status that is none of conditionStatuses.
const noStatus = int8(-1)

// values is a copy of a record's values, taken under its lock for a
// scrape.
type values struct {
	recorded, hasSize, suspended bool
	condition, ready             int8
	size                         float64
	work                         uint64
	durations                    durations
	observed                     bool
}

func (r *record) values() values {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := values{
		recorded: r.recorded, hasSize: r.hasSize, suspended: r.suspended,
		condition: r.condition, ready: r.ready, size: r.size, work: r.work,
	}
	if r.durations != nil {
		v.durations, v.observed = *r.durations, true
	}
	return v
}

// observe adds one reconcile's duration to the object's histogram.
func (r *record) observe(seconds float64) {
	if r.durations == nil {
		r.durations = &durations{}
	}
	r.durations.observe(seconds)
}

// durations is one object's histogram of Flux's buckets: the count of
// each bucket alone (the last: above every bound), and the sum.
type durations struct {
	counts [len(toolkitBuckets) + 1]uint64
	sum    float64
}

// observe counts v in the first bucket whose upper bound is at least v,
// as client_golang's histogram does.
func (d *durations) observe(v float64) {
	i := 0
	for i < len(toolkitBuckets) && v > toolkitBuckets[i] {
		i++
	}
	d.counts[i]++
	d.sum += v
}

// update runs set on the record of namespace/name under its lock,
// creating the record first if there is none. It holds the map's read
// lock meanwhile, so that a Forget of the object happens entirely before
// or after it, never in between.
func (m *Object) update(namespace, name string, set func(*record)) {
	k := objectKey{namespace, name}
	m.mu.RLock()
	if r := m.records[k]; r != nil {
		r.mu.Lock()
		set(r)
		r.mu.Unlock()
		m.mu.RUnlock()
		return
	}
	m.mu.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.records[k]
	if r == nil {
		r = &record{namespace: namespace, name: name, ready: noStatus}
		m.records[k] = r
	}
	r.mu.Lock() // a scrape may be reading it outside the map's lock
	set(r)
	r.mu.Unlock()
}

// snapshot returns the records of every object, so that a scrape reads
// them without holding the map's lock while the registry takes its
// series: a reconcile that creates or forgets an object does not wait for
// a scrape.
func (m *Object) snapshot() []*record {
	m.mu.RLock()
	defer m.mu.RUnlock()
	all := make([]*record, 0, len(m.records))
	for _, r := range m.records {
		all = append(all, r)
	}
	return all
}
