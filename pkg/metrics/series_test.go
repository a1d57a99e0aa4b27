package metrics

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectMetrics is what a reconcile calls, in both implementations.
type objectMetrics interface {
	Record(namespace, name string, conditions []metav1.Condition, suspended bool, artifactSize *int64)
	observe(namespace, name string, took float64)
	Worked(namespace, name string)
	Forget(namespace, name string)
}

// The specs of the test: sync-controller's Kustomizations (Flux's series,
// no work counter), source-controller's GitRepositories (Flux's series and
// a work counter per object) and render-controller's Kustomizations
// (ConditionOnly, its work over every object).
var testSpecs = []Spec{
	{Subsystem: "sync", Kind: "Kustomization", Condition: "Ready", Toolkit: true},
	{Subsystem: "source", Kind: "GitRepository", Condition: "Ready", Toolkit: true, Work: "fetches_total", WorkHelp: "Fetches."},
	{Subsystem: "render", Kind: "Kustomization", Condition: "Rendered", ConditionOnly: true, Work: "builds_total", WorkHelp: "Builds."},
}

// scrape serves reg's /metrics as controller-runtime's metrics server does
// (promhttp, the text format) and returns the body.
func scrape(g Gomega, reg *prometheus.Registry) string {
	w := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	g.Expect(w.Code).To(Equal(http.StatusOK), w.Body.String())
	return w.Body.String()
}

// step applies one random call to the same object of both sets. Durations
// include each bucket's bound (a bound belongs to its bucket) and values
// past the last; conditions every status, a missing Ready, and a status
// no enum allows.
func step(rnd *rand.Rand, sets [][2]objectMetrics) {
	set := sets[rnd.IntN(len(sets))]
	namespace, name := fmt.Sprintf("ns-%d", rnd.IntN(3)), fmt.Sprintf("app-%d", rnd.IntN(12))
	switch op := rnd.IntN(10); {
	case op < 4:
		var conditions []metav1.Condition
		statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown, "Maybe"}
		for _, t := range []string{"Ready", "Rendered", "Reconciling"} {
			if rnd.IntN(4) > 0 {
				conditions = append(conditions, metav1.Condition{Type: t, Status: statuses[rnd.IntN(len(statuses))]})
			}
		}
		var size *int64
		if rnd.IntN(2) == 0 {
			size = new(rnd.Int64N(1 << 40))
		}
		suspended := rnd.IntN(3) == 0
		for _, m := range set {
			m.Record(namespace, name, conditions, suspended, size)
		}
	case op < 7:
		took := rnd.Float64() * 3600
		if rnd.IntN(3) == 0 {
			took = toolkitBuckets[rnd.IntN(len(toolkitBuckets))]
		}
		for _, m := range set {
			m.observe(namespace, name, took)
		}
	case op < 9:
		for _, m := range set {
			m.Worked(namespace, name)
		}
	default:
		for _, m := range set {
			m.Forget(namespace, name)
		}
	}
}

// The series made at scrape time are the vectors' series, byte for byte in
// the exposition /metrics serves: the same names, help texts, types,
// labels, buckets and values, through every sequence of calls of a
// reconcile, Forget included.
func TestSeriesAreTheVectorsSeries(t *testing.T) {
	g := NewWithT(t)
	records, vectors := prometheus.NewRegistry(), prometheus.NewRegistry()
	var sets [][2]objectMetrics
	for _, s := range testSpecs {
		sets = append(sets, [2]objectMetrics{NewObject(records, s), newVectorObject(vectors, s)})
	}
	rnd := rand.New(rand.NewPCG(45, 4))
	for i := 1; i <= 4000; i++ {
		step(rnd, sets)
		if i%100 == 0 {
			want := scrape(g, vectors)
			g.Expect(scrape(g, records)).To(Equal(want), "after %d calls", i)
		}
	}
	// The comparison saw every kind of series.
	last := scrape(g, records)
	for _, name := range []string{
		"plumb_sync_ready{", "plumb_sync_suspended{", "plumb_sync_artifact_size_bytes{",
		"plumb_source_fetches_total{", "plumb_render_rendered{", "plumb_render_builds_total ",
		`gotk_reconcile_duration_seconds_bucket{kind="GitRepository"`, `gotk_reconcile_duration_seconds_bucket{kind="Kustomization"`,
		`gotk_reconcile_condition{kind="Kustomization"`, `status="Deleted"`, "gotk_suspend_status{",
	} {
		g.Expect(last).To(ContainSubstring(name))
	}
	g.Expect(last).NotTo(ContainSubstring("plumb_render_suspended"))
}

// Reconciles record, observe, count and forget while /metrics is scraped
// (run with -race): every scrape succeeds, and once the reconciles are
// done the series are those of the same calls made one after the other.
func TestSeriesWhileReconcilesRun(t *testing.T) {
	g := NewWithT(t)
	records, vectors := prometheus.NewRegistry(), prometheus.NewRegistry()
	var objects, reference []objectMetrics
	for _, s := range testSpecs {
		objects = append(objects, NewObject(records, s))
		reference = append(reference, newVectorObject(vectors, s))
	}
	// Each worker has objects of its own, as controller-runtime never
	// reconciles one object in two workers at once; durations are powers
	// of two, so that the kind's histogram sums to the same whatever the
	// order of the workers.
	// A worker beside the scrapes waits for the next one every 250 calls,
	// so that each scrape has calls on both sides.
	var scraped atomic.Int64
	work := func(worker int, sets []objectMetrics, scraping bool) {
		rnd := rand.New(rand.NewPCG(uint64(worker), 45))
		for i := range 2000 {
			if scraping && i%250 == 0 {
				for n := scraped.Load(); scraped.Load() == n; {
					runtime.Gosched()
				}
			}
			m := sets[rnd.IntN(len(sets))]
			namespace, name := fmt.Sprintf("ns-%d", worker), fmt.Sprintf("app-%d", rnd.IntN(20))
			switch rnd.IntN(5) {
			case 0, 1:
				m.Record(namespace, name, []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}, rnd.IntN(2) == 0, new(int64(rnd.IntN(100))))
			case 2:
				m.observe(namespace, name, float64(int(1)<<rnd.IntN(12))/64)
			case 3:
				m.Worked(namespace, name)
			default:
				m.Forget(namespace, name)
			}
		}
	}
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() { work(w, objects, true) })
	}
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	for running := true; running; scraped.Add(1) {
		select {
		case <-done:
			running = false
		default:
		}
		_ = scrape(g, records)
	}
	for w := range 4 {
		work(w, reference, false)
	}
	g.Expect(scrape(g, records)).To(Equal(scrape(g, vectors)))
}

// Two sets of one kind on one registry would make each object's gotk_*
// series twice, and every scrape fail: the second is refused when it is
// created.
func TestToolkitKindTwiceOnOneRegistryPanics(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	NewObject(reg, Spec{Subsystem: "sync", Kind: "Kustomization", Condition: "Ready", Toolkit: true})
	g.Expect(func() {
		NewObject(reg, Spec{Subsystem: "sync_again", Kind: "Kustomization", Condition: "Ready", Toolkit: true})
	}).To(PanicWith(ContainSubstring("Kustomization")))
}
