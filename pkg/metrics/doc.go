// Package metrics holds the Prometheus metrics every Plumb controller keeps
// per kind and per reconciled object, under one naming scheme:
//
//	plumb_<subsystem>_reconcile_duration_seconds                  histogram over every object of the kind
//	plumb_<subsystem>_step_duration_seconds{step}                 histogram per step of the reconcile, over every object
//	plumb_<subsystem>_<condition>{namespace,name}                  gauge: 1 True, 0 False, -1 Unknown
//	plumb_<subsystem>_suspended{namespace,name}                    gauge: 1 while suspended
//	plumb_<subsystem>_artifact_size_bytes{namespace,name}          gauge: the current artifact's size
//	plumb_<subsystem>_<work>{namespace,name}                       counter of the expensive work done
//
// where <condition> is the lower-cased condition a controller reports on
// (ready, rendered) and <work> names what a skipped reconcile saves
// (fetches_total, builds_total). Controllers add their own metrics beside.
// A set with Spec.ConditionOnly (render-controller's) keeps per object the
// condition's series alone, and its work counter has no object labels.
// The duration has no object labels: 14 buckets per object were most of
// what a fleet's series cost (docs/design/metrics.md), and the duration of
// one object is gotk_reconcile_duration_seconds' (below) for each kind
// whose Ready a controller owns.
//
// Beside them, a kind whose Spec sets Toolkit also has Flux's series, so
// that Flux's Grafana dashboards and alert rules work unchanged
// (toolkit.go; docs/design/metrics.md says which controller exports which
// kind):
//
//	gotk_reconcile_duration_seconds{kind,name,namespace}          histogram, Flux's buckets
//	gotk_reconcile_condition{kind,name,namespace,type,status}     gauge: type Ready; 1 for its status, 0 for the others
//	gotk_suspend_status{kind,name,namespace}                      gauge: 1 while suspended
//
// status is True, False, Unknown or Deleted. fluxcd/pkg/runtime/metrics,
// which Flux's controllers use, is not used here: it has no Deleted
// series, and the expressions of Flux's ReconciliationFailure alert rule
// and of its dashboards of that metric add or subtract them, so with it
// they come out empty — an alert that never fires. Here a live object's
// Deleted series is 0, and a deleted object's series are removed (Forget),
// as Flux removes them now rather than keep Deleted=1 forever. And its
// Recorder's three collectors are created per Recorder, while a Plumb
// controller creates one Object per kind on one registry: here the second
// kind reuses the collectors the first registered.
//
// The per-object series are not client_golang vectors: an Object keeps
// one record per object, its values only (record.go: the condition, the
// suspension, the size, the work count, the Ready status and the
// histogram's bucket counts and sum), and its collector and the
// registry's gotk_* collector make every object's series from them when
// /metrics is scraped (series.go), as client_golang's documentation has a
// collector do for values kept elsewhere. A vector keeps per series a
// metric, its label pairs and a hash map entry, and a histogram its
// atomic buckets: 6.3 KB of heap per Kustomization in sync-controller,
// where a record and its map entry keep 0.26 KB (BenchmarkRetainedHeap;
// docs/design/metrics.md, "What a series costs"). The series are the
// vectors' byte for byte (TestSeriesAreTheVectorsSeries, against the
// vectors kept in the tests) and a series still appears with the call
// that first sets it. The series are written into the registry's
// dto.Metric directly rather than made with prometheus.MustNewConstMetric
// and MustNewConstHistogram, which copy and check each label value and
// build a map of a histogram's buckets for every series of every scrape.
package metrics
