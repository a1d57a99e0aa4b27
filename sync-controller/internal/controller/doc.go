// Package controller holds sync-controller's Kustomization reconciler.
//
// sync-controller owns these status fields of a Kustomization and writes
// them by server-side apply under the field manager plumb-sync (the
// inventory under plumb-sync-inventory), and only when they changed:
// observedGeneration, the conditions Ready, Reconciling, Stalled, Healthy and
// Drifted, lastAppliedRevision, lastAttemptedRevision, inventory, drift,
// sync and lastHandledReconcileAt. render-controller owns renderedArtifact
// and the Rendered condition; Ready summarizes both.
//
// # Metrics
//
//	plumb_sync_reconcile_duration_seconds{namespace,name}   histogram (pkg/metrics' set)
//	plumb_sync_objects_total{action}                        counter: Created, Configured, Unchanged, Deleted
//	plumb_sync_drift_detected_total{namespace,name}         counter
//	plumb_sync_drift_corrected_total{namespace,name}        counter
//	plumb_sync_drift_correction_seconds                     histogram: foreign write seen → reverted
//	plumb_sync_ready{namespace,name}                        gauge: 1 True, 0 False, -1 Unknown
//	plumb_sync_suspended{namespace,name}                    gauge: 1 suspended
//	plumb_sync_artifact_size_bytes{namespace,name}          gauge: the rendered artifact synced
package controller
