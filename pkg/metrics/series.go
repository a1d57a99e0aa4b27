package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The series are made at scrape time, by the collectors, from the
// records: each is a prometheus.Metric that writes its sample into the
// registry's dto.Metric as client_golang's own metrics do, without what
// prometheus.MustNewConstMetric costs per series (its label values'
// check and copy, a LabelPair and two strings per label, and for a
// histogram a map of its buckets). The label pairs of one object are made
// once per scrape and shared by its series, the pairs of a fixed name and
// value once for good: client_golang treats a written dto.Metric's labels
// as immutable, and its vectors share their label pairs the same way.

// objectCollector makes an Object's plumb_* series of every object.
type objectCollector struct{ m *Object }

func (c objectCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.m.condition, c.m.suspended, c.m.size, c.m.work} {
		if d != nil {
			ch <- d
		}
	}
}

func (c objectCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	for _, r := range m.snapshot() {
		v := r.values()
		// The gauges (the condition, suspended, size) in one allocation
		// of as many as there are, and the work counter.
		count := 0
		if v.recorded {
			count++
			if m.suspended != nil {
				count++
			}
		}
		if v.hasSize {
			count++
		}
		gauges := make([]gauge, count)
		n := 0
		p := namePairs(r)
		labels := []*dto.LabelPair{&p[0], &p[1]}
		send := func(desc *prometheus.Desc, value float64) {
			g := &gauges[n]
			n++
			g.desc, g.labels, g.value = desc, labels, value
			ch <- g
		}
		if v.recorded {
			send(m.condition, float64(v.condition))
			if m.suspended != nil {
				send(m.suspended, boolValue(v.suspended))
			}
		}
		if v.hasSize {
			send(m.size, v.size)
		}
		if v.work > 0 {
			ch <- &counter{desc: m.work, labels: labels, value: float64(v.work)}
		}
	}
}

// namePairs are the label pairs name and namespace of r, in the order of
// their names, as a dto.Metric's labels must be sorted.
func namePairs(r *record) *[2]dto.LabelPair {
	pairs := new([2]dto.LabelPair)
	pairs[0].Name, pairs[0].Value = &nameLabel, &r.name
	pairs[1].Name, pairs[1].Value = &namespaceLabel, &r.namespace
	return pairs
}

// The label names, for the label pairs' pointers.
var (
	kindLabel      = "kind"
	nameLabel      = "name"
	namespaceLabel = "namespace"
	typeLabel      = "type"
	statusLabel    = "status"
)

// gauge is one gauge's sample.
type gauge struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	out    dto.Gauge
}

func (g *gauge) Desc() *prometheus.Desc { return g.desc }

func (g *gauge) Write(out *dto.Metric) error {
	g.out.Value = &g.value
	out.Label, out.Gauge = g.labels, &g.out
	return nil
}

// counter is one counter's sample.
type counter struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	out    dto.Counter
}

func (c *counter) Desc() *prometheus.Desc { return c.desc }

func (c *counter) Write(out *dto.Metric) error {
	c.out.Value = &c.value
	out.Label, out.Counter = c.labels, &c.out
	return nil
}

// histogram is one histogram's sample, of Flux's buckets.
type histogram struct {
	desc       *prometheus.Desc
	labels     []*dto.LabelPair
	cumulative [len(toolkitBuckets)]uint64
	count      uint64
	sum        float64
	out        dto.Histogram
	buckets    [len(toolkitBuckets)]dto.Bucket
	pointers   [len(toolkitBuckets)]*dto.Bucket
}

func newHistogram(desc *prometheus.Desc, labels []*dto.LabelPair, d *durations) *histogram {
	h := &histogram{desc: desc, labels: labels, sum: d.sum}
	for i := range toolkitBuckets {
		h.count += d.counts[i]
		h.cumulative[i] = h.count
	}
	h.count += d.counts[len(toolkitBuckets)]
	return h
}

func (h *histogram) Desc() *prometheus.Desc { return h.desc }

func (h *histogram) Write(out *dto.Metric) error {
	for i := range h.buckets {
		h.buckets[i].CumulativeCount, h.buckets[i].UpperBound = &h.cumulative[i], &toolkitBuckets[i]
		h.pointers[i] = &h.buckets[i]
	}
	h.out.SampleCount, h.out.SampleSum, h.out.Bucket = &h.count, &h.sum, h.pointers[:]
	out.Label, out.Histogram = h.labels, &h.out
	return nil
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
