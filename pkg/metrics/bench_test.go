package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fleetObjects is the fleet of issue 45's memory target: 5,000
// Kustomizations.
const fleetObjects = 5000

// fleetShapes are what one Kustomization of a fleet leaves in the two
// controllers that keep series of it: sync-controller's set (its Ready,
// suspension, artifact size and Flux's series with two reconciles
// observed) and render-controller's (ConditionOnly: its Rendered, its
// builds counted over the kind).
var fleetShapes = []struct {
	name string
	spec Spec
}{
	{"sync", Spec{Subsystem: "sync", Kind: "Kustomization", Condition: "Ready", Toolkit: true}},
	{"render", Spec{Subsystem: "render", Kind: "Kustomization", Condition: "Rendered", ConditionOnly: true, Work: "builds_total", WorkHelp: "Builds."}},
}

// fleetNames are the fleet's namespaces, one Kustomization "app" in each,
// made before a measurement: the controller holds the names anyway, in
// its informers' objects.
func fleetNames() []string {
	names := make([]string, fleetObjects)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%05d", i)
	}
	return names
}

func fill(m objectMetrics, namespaces []string) {
	size := int64(2345)
	conditions := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue},
		{Type: "Rendered", Status: metav1.ConditionTrue},
	}
	for _, ns := range namespaces {
		m.Record(ns, "app", conditions, false, &size)
		m.observe(ns, "app", 0.3)
		m.observe(ns, "app", 1.2)
		m.Worked(ns, "app")
	}
}

// implementations make a set on a registry: the series made at scrape time
// and, as the baseline, the vectors they replace.
var implementations = []struct {
	name string
	make func(prometheus.Registerer, Spec) objectMetrics
}{
	{"vectors", func(r prometheus.Registerer, s Spec) objectMetrics { return newVectorObject(r, s) }},
	{"records", func(r prometheus.Registerer, s Spec) objectMetrics { return NewObject(r, s) }},
}

// BenchmarkRetainedHeap reports the heap a fleet's series keep between
// scrapes, per Kustomization (B/object): the live heap after a GC with
// the set filled and scraped once, less the live heap before it was made.
//
//	go test -run - -bench RetainedHeap -benchtime 5x ./metrics/
func BenchmarkRetainedHeap(b *testing.B) {
	for _, impl := range implementations {
		for _, shape := range fleetShapes {
			b.Run(impl.name+"/"+shape.name, func(b *testing.B) {
				namespaces := fleetNames()
				var total float64
				for b.Loop() {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					reg := prometheus.NewRegistry()
					fill(impl.make(reg, shape.spec), namespaces)
					if _, err := reg.Gather(); err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					runtime.KeepAlive(reg)
					total += float64(after.HeapAlloc) - float64(before.HeapAlloc)
				}
				b.ReportMetric(total/float64(b.N)/fleetObjects, "B/object")
			})
		}
	}
}

// BenchmarkScrape reports what one scrape of /metrics costs with a fleet's
// series (allocations per op; B/op is what a scrape adds to the heap
// before the next GC), served as controller-runtime serves it.
//
//	go test -run - -bench Scrape -benchmem ./metrics/
func BenchmarkScrape(b *testing.B) {
	namespaces := fleetNames()
	for _, impl := range implementations {
		for _, shape := range fleetShapes {
			b.Run(impl.name+"/"+shape.name, func(b *testing.B) {
				reg := prometheus.NewRegistry()
				fill(impl.make(reg, shape.spec), namespaces)
				handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
				request := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				var w discard
				b.ReportAllocs()
				for b.Loop() {
					w.code, w.bytes = 0, 0
					handler.ServeHTTP(&w, request)
				}
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
				b.ReportMetric(float64(w.bytes), "body-bytes")
			})
		}
	}
}

// discard is a ResponseWriter that keeps the status and the body's length.
type discard struct {
	code, bytes int
	header      http.Header
}

func (d *discard) Header() http.Header {
	if d.header == nil {
		d.header = http.Header{}
	}
	return d.header
}

func (d *discard) Write(p []byte) (int, error) {
	d.bytes += len(p)
	return len(p), nil
}

func (d *discard) WriteHeader(code int) { d.code = code }
