package controller

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/api/meta"
)

// fluxCondition maps the statuses of the object's gotk_reconcile_condition
// series (type Ready) to their values.
func fluxCondition(t *testing.T, kind, ns, obj string) map[string]float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gotk_reconcile_condition" {
			continue
		}
		for _, m := range mf.Metric {
			l := labels(m)
			if l["kind"] == kind && l["namespace"] == ns && l["name"] == obj && l["type"] == meta.ReadyCondition {
				out[l["status"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
