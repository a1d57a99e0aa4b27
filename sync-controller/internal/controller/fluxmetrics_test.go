package controller

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// fluxQuery is one PromQL expression of Flux's stock Grafana dashboards or
// alert rules, written here as data, with what it must return against
// this test's objects. The Grafana variables are replaced before the
// evaluation: $operator_namespace (and $namespace where podNamespace) by
// scrapeNamespace, $namespace by the test's namespace.
type fluxQuery struct {
	from string // the dashboard and panel, or the rule
	expr string
	// podNamespace: the dashboard's $namespace is the scraped pod's
	// namespace (control-plane.json, and cluster.json before Flux 2.1),
	// not the objects'.
	podNamespace bool
	check        func(g Gomega, v promql.Vector)
}

// The scrape Prometheus makes in Flux's monitoring setup: a PodMonitor
// (monitoring-config/podmonitor.yaml) or the pod-annotation job of
// Flux's former prometheus.yml; both give each series the pod's namespace
// and name as target labels, which renames the object's namespace label
// to exported_namespace (honor_labels is off). The dashboards rely on that.
const (
	scrapeNamespace = "plumb-system"
	scrapePod       = "sync-controller-5d4b9c7f6-x2x9q"
)

// Flux's dashboards and alert rules, evaluated with Prometheus' PromQL
// engine against sync-controller's /metrics scraped over HTTP, after it
// reconciled real objects: three Kustomizations (Ready, failing,
// suspended), a HelmRelease (Ready), and a deleted Kustomization whose
// series must be gone. Prometheus' kube-state-metrics gotk_resource_info
// (Flux's dashboards since 2.1) and cAdvisor's container_* are not a
// controller's metrics, and are left out.
func TestFluxDashboardsAndAlertsReadPlumbMetrics(t *testing.T) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	reg := prometheus.NewRegistry()
	stopController()
	stopController = startController(func(r *KustomizationReconciler) { r.Metrics = NewMetrics(reg) })
	t.Cleanup(func() { stopController(); stopController = startController() })
	// The binary registers Plumb's metrics on controller-runtime's registry
	// and serves it at /metrics; the test's own registry beside it keeps a
	// restarted controller from registering twice.
	metricsServer := httptest.NewServer(promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, reg}, promhttp.HandlerOpts{}))
	t.Cleanup(metricsServer.Close)

	g := NewWithT(t)
	ctx, ready := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Name = "ready" })
	ns := ready.Namespace
	in := func(name string) func(*kustomizev1.Kustomization) {
		return func(ks *kustomizev1.Kustomization) { ks.Namespace, ks.Name = ns, name }
	}
	_, failing := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		in("failing")(ks)
		// A Deployment never gets healthy without kube-controller-manager.
		ks.Spec.Wait = true
		ks.Spec.Timeout.Duration = 2 * time.Second
	})
	_, suspended := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		in("suspended")(ks)
		ks.Spec.Suspend = true
	})
	_, deleted := newKustomization(t, in("deleted"))
	_, release := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Namespace, hr.Name = ns, "release" })

	render(t, ready, "main@sha1:1111", configMapIn(ns, "ready"))
	render(t, deleted, "main@sha1:1111", configMapIn(ns, "deleted"))
	render(t, failing, "main@sha1:1111", deployment(ns, "web", 1))
	renderRelease(t, release, "1.0.0", "replicas: 1", configMapIn(ns, "release"))
	waitReady(t, ready, "main@sha1:1111")
	waitReady(t, deleted, "main@sha1:1111")
	waitReleaseReady(t, release, "1.0.0")
	g.Eventually(func(g Gomega) string {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(failing), got)).To(Succeed())
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		return string(ready.Status)
	}, time.Minute, 100*time.Millisecond).Should(Equal("False"))
	g.Eventually(func(g Gomega) []string {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(suspended), got)).To(Succeed())
		return got.Finalizers
	}, time.Minute, 100*time.Millisecond).ShouldNot(BeEmpty(), "sync-controller saw the suspended Kustomization")
	exposition := func(g Gomega) string {
		resp, err := http.Get(metricsServer.URL)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return string(body)
	}
	deletedSeries := `gotk_reconcile_condition{kind="Kustomization",name="deleted",namespace="` + ns + `"`
	g.Expect(exposition(g)).To(ContainSubstring(deletedSeries))
	g.Expect(env.Client.Delete(ctx, deleted)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(deleted), &kustomizev1.Kustomization{})
	}, time.Minute, 100*time.Millisecond).Should(MatchError(ContainSubstring("not found")))
	// Its series go with it, as Flux drops a deleted object's.
	g.Eventually(exposition, time.Minute, 100*time.Millisecond).ShouldNot(ContainSubstring(`name="deleted"`))

	// Two scrapes with reconciles between them, so that the rates of the
	// dashboards have an increase to show.
	db := teststorage.New(t)
	first := time.Now()
	scrape(t, metricsServer.URL, first, db, ns)
	render(t, ready, "main@sha1:2222", configMapIn(ns, "ready")+"---\n"+configMapIn(ns, "ready-2"))
	renderRelease(t, release, "1.1.0", "replicas: 2", configMapIn(ns, "release"))
	waitReady(t, ready, "main@sha1:2222")
	waitReleaseReady(t, release, "1.1.0")
	// Stored 30 s apart, a usual scrape interval, so that the dashboards'
	// [1m] windows hold both.
	at := first.Add(30 * time.Second)
	scrape(t, metricsServer.URL, at, db, ns)

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	for _, q := range fluxQueries() {
		t.Run(q.from, func(t *testing.T) {
			g := NewWithT(t)
			objects := ns
			if q.podNamespace {
				objects = scrapeNamespace
			}
			expr := strings.NewReplacer("$operator_namespace", scrapeNamespace, "$namespace", objects).Replace(q.expr)
			query, err := engine.NewInstantQuery(ctx, db, nil, expr, at)
			g.Expect(err).NotTo(HaveOccurred(), expr)
			res := query.Exec(ctx)
			g.Expect(res.Err).NotTo(HaveOccurred(), expr)
			v, err := res.Vector()
			g.Expect(err).NotTo(HaveOccurred(), expr)
			q.check(g, v)
		})
	}
}

// fluxQueries are the expressions of Flux's monitoring, by where Flux
// uses them: flux2's manifests/monitoring dashboards (cluster.json of the
// gotk_reconcile_condition era, whose $namespace is the scraped pod's;
// monitoring-config's cluster.json and control-plane.json of today), and
// the ReconciliationFailure alert rule of Flux's monitoring guide.
func fluxQueries() []fluxQuery {
	return []fluxQuery{{
		from: "alert ReconciliationFailure",
		expr: `max(gotk_reconcile_condition{status="False",type="Ready"}) by (namespace, name, kind) + on(namespace, name, kind) (max(gotk_reconcile_condition{status="Deleted"}) by (namespace, name, kind)) * 2 == 1`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(names(v)).To(ConsistOf("Kustomization/failing"), "fires for the failing object only")
		},
	}, {
		from: "cluster (gotk_reconcile_condition) Cluster Reconcilers",
		expr: `count(gotk_reconcile_condition{namespace=~"$namespace",type="Ready",status="True",kind=~"Kustomization|HelmRelease"})
-
sum(gotk_reconcile_condition{namespace=~"$namespace",type="Ready",status="Deleted",kind=~"Kustomization|HelmRelease"})`,
		podNamespace: true,
		check:        scalar(4), // ready, failing, suspended, release; not deleted
	}, {
		from:         "cluster (gotk_reconcile_condition) Failing Reconcilers",
		expr:         `sum(gotk_reconcile_condition{namespace=~"$namespace",type="Ready",status="False",kind=~"Kustomization|HelmRelease"})`,
		podNamespace: true,
		check:        scalar(1),
	}, {
		from:         "cluster (gotk_reconcile_condition) Cluster reconciliation readiness",
		expr:         `gotk_reconcile_condition{namespace=~"$namespace",type="Ready",status="False",kind=~"Kustomization|HelmRelease"}`,
		podNamespace: true,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(values(v)).To(Equal(map[string]float64{
				"Kustomization/ready": 0, "Kustomization/failing": 1, "Kustomization/suspended": 0, "HelmRelease/release": 0,
			}))
		},
	}, {
		from: "Flux's suspend metric gotk_suspend_status",
		expr: `gotk_suspend_status{exported_namespace="$namespace"} == 1`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(names(v)).To(ConsistOf("Kustomization/suspended"))
		},
	}, {
		from: "cluster Reconciler ops avg. duration",
		expr: `  sum(rate(gotk_reconcile_duration_seconds_sum{namespace=~"$operator_namespace",exported_namespace=~"$namespace",kind=~"Kustomization|HelmRelease"}[5m])) by (kind)
/
  sum(rate(gotk_reconcile_duration_seconds_count{namespace=~"$operator_namespace",exported_namespace=~"$namespace",kind=~"Kustomization|HelmRelease"}[5m])) by (kind)`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(byLabel(v, "kind")).To(HaveKey("Kustomization"))
			g.Expect(byLabel(v, "kind")).To(HaveKey("HelmRelease"))
			for _, s := range v {
				g.Expect(s.F).To(BeNumerically(">", 0), "an average duration, not NaN")
			}
		},
	}, {
		from:         "control-plane Controllers",
		expr:         `sum(go_info{namespace="$namespace",pod=~".*-controller-.*"})`,
		podNamespace: true,
		check:        scalar(1),
	}, {
		from:         "control-plane Max Work Queue",
		expr:         `max(workqueue_longest_running_processor_seconds{namespace="$namespace",pod=~".*-controller-.*"})`,
		podNamespace: true,
		check:        present,
	}, {
		from:         "control-plane Memory",
		expr:         `sum(go_memstats_alloc_bytes{namespace="$namespace",pod=~".*-controller-.*"})`,
		podNamespace: true,
		check:        positive,
	}, {
		from:         "control-plane API Requests",
		expr:         `sum(rate(rest_client_requests_total{namespace="$namespace",pod=~".*-controller-.*"}[1m]))`,
		podNamespace: true,
		check:        positive,
	}, {
		from:         "control-plane CPU Usage",
		expr:         `rate(process_cpu_seconds_total{namespace="$namespace",pod=~".*-controller-.*"}[1m])`,
		podNamespace: true,
		check:        present,
	}, {
		from:  "control-plane Cluster Reconciliation Duration",
		expr:  `workqueue_longest_running_processor_seconds{name="kustomization"}`,
		check: present,
	}, {
		from: "control-plane Cluster Reconciliations ops/min",
		expr: `sum(increase(controller_runtime_reconcile_total{controller="kustomization",result!="error"}[1m])) by (controller)`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(byLabel(v, "controller")).To(HaveKeyWithValue("kustomization", BeNumerically(">", 0)))
		},
	}, {
		from: "control-plane Helm Releases ops/min",
		expr: `sum(increase(controller_runtime_reconcile_total{controller="helmrelease",result!="error"}[1m])) by (controller)`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(byLabel(v, "controller")).To(HaveKeyWithValue("helmrelease", BeNumerically(">", 0)))
		},
	}, {
		from: "control-plane variable namespace",
		expr: `workqueue_work_duration_seconds_count`,
		check: func(g Gomega, v promql.Vector) {
			g.Expect(byLabel(v, "namespace")).To(HaveKey(scrapeNamespace), "the dashboard's namespace list offers the controller's")
		},
	}, {
		from:  "control-plane Helm Release Duration",
		expr:  `histogram_quantile(0.99, sum(rate(controller_runtime_reconcile_time_seconds_bucket{controller="helmrelease"}[5m])) by (le))`,
		check: positive,
	}}
}

// scrape reads url's metrics and stores them as Prometheus would have at
// at: with the pod's target labels, the object's namespace label renamed
// exported_namespace. Only the series of objects in ns are kept (and those
// of no object), so that the cluster-wide counts of the dashboards count
// this test's objects and not those other tests of the suite left behind.
func scrape(t *testing.T, url string, at time.Time, db storage.Appendable, ns string) {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())

	app := db.Appender(context.Background())
	ts := at.UnixMilli()
	add := func(name string, m *dto.Metric, v float64, extra ...string) {
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, l := range m.GetLabel() {
			n := l.GetName()
			if n == "namespace" {
				if l.GetValue() != ns {
					return
				}
				n = "exported_namespace"
			}
			b.Set(n, l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		b.Set(model.MetricNameLabel, name)
		b.Set("namespace", scrapeNamespace)
		b.Set("pod", scrapePod)
		b.Set("job", scrapeNamespace+"/sync-controller")
		b.Set("instance", "10.244.0.7:8080")
		_, err := app.Append(0, b.Labels(), ts, v)
		g.Expect(err).NotTo(HaveOccurred())
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", m, float64(b.GetCumulativeCount()), "le", formatBound(b.GetUpperBound()))
				}
				add(name+"_bucket", m, float64(h.GetSampleCount()), "le", "+Inf")
				add(name+"_sum", m, h.GetSampleSum())
				add(name+"_count", m, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, q.GetValue(), "quantile", formatBound(q.GetQuantile()))
				}
				add(name+"_sum", m, s.GetSampleSum())
				add(name+"_count", m, float64(s.GetSampleCount()))
			}
		}
	}
	g.Expect(app.Commit()).To(Succeed())
}

// formatBound writes a bucket bound as the text exposition format does.
func formatBound(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// names lists a result's objects as kind/name.
func names(v promql.Vector) []string {
	out := make([]string, 0, len(v))
	for _, s := range v {
		out = append(out, s.Metric.Get("kind")+"/"+s.Metric.Get("name"))
	}
	return out
}

// values maps a result's objects (kind/name) to their values.
func values(v promql.Vector) map[string]float64 {
	out := map[string]float64{}
	for _, s := range v {
		out[s.Metric.Get("kind")+"/"+s.Metric.Get("name")] = s.F
	}
	return out
}

// byLabel maps a result's label's values to the samples' values.
func byLabel(v promql.Vector, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range v {
		out[s.Metric.Get(label)] = s.F
	}
	return out
}

// scalar checks a one-element result of value want (a panel's number).
func scalar(want float64) func(Gomega, promql.Vector) {
	return func(g Gomega, v promql.Vector) {
		g.Expect(v).To(HaveLen(1), "one number, not an empty panel")
		g.Expect(v[0].F).To(Equal(want))
	}
}

// present checks that a panel shows something (a value that is not NaN).
func present(g Gomega, v promql.Vector) {
	g.Expect(v).NotTo(BeEmpty(), "an empty panel")
	for _, s := range v {
		g.Expect(math.IsNaN(s.F)).To(BeFalse(), fmt.Sprint(s))
	}
}

// positive checks a one-element result greater than zero.
func positive(g Gomega, v promql.Vector) {
	g.Expect(v).To(HaveLen(1), "one number, not an empty panel")
	g.Expect(v[0].F).To(BeNumerically(">", 0))
}
