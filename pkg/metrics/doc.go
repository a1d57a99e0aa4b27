// Package metrics holds the Prometheus metrics every Plumb controller keeps
// per reconciled object, under one naming scheme:
//
//	plumb_<subsystem>_reconcile_duration_seconds{namespace,name}  histogram
//	plumb_<subsystem>_<condition>{namespace,name}                  gauge: 1 True, 0 False, -1 Unknown
//	plumb_<subsystem>_suspended{namespace,name}                    gauge: 1 while suspended
//	plumb_<subsystem>_artifact_size_bytes{namespace,name}          gauge: the current artifact's size
//	plumb_<subsystem>_<work>{namespace,name}                       counter of the expensive work done
//
// where <condition> is the lower-cased condition a controller reports on
// (ready, rendered) and <work> names what a skipped reconcile saves
// (fetches_total, builds_total). Controllers add their own metrics beside.
package metrics
