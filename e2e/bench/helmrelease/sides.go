package main

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// side is one of the two implementations measured: how its HelmReleases
// are written and what tells that one has caught up. Everything else —
// the chart, the namespaces' shape, the phases and their clocks — is the
// same for both, so the objects are written as unstructured with the
// fields both APIs share (Plumb's HelmRelease v2 follows Flux's names).
type side struct {
	name string // Plumb, Flux
	gvk  schema.GroupVersionKind
	// ns holds the side's chart source and HelmReleases; each release
	// installs into a target namespace of its own, prefix + NNNN.
	ns, prefix string
	// chartRef is the HelmReleases' spec.chartRef.
	chartRef map[string]any
	// requestAnnotation asks for a reconcile now (what `flux reconcile`
	// and `plumb reconcile` write).
	requestAnnotation string
	// controllers are the processes that do this side's work.
	controllers []string
}

// appName names the i-th release: its HelmRelease and Helm release name.
func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// targetNamespace is where the i-th release of a side installs.
func (s *side) targetNamespace(i int) string { return fmt.Sprintf("%s%04d", s.prefix, i) }

// helmRelease is the i-th HelmRelease of the side. The release name is
// set, not defaulted, so that it is the same on both sides (each side's
// default differs) and unique in Flux's storage namespace (the
// HelmRelease's). Drift detection is on for both: Plumb's default, Flux's
// opt-in.
func (s *side) helmRelease(i int, interval time.Duration) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"interval":        interval.String(),
			"chartRef":        s.chartRef,
			"releaseName":     appName(i),
			"targetNamespace": s.targetNamespace(i),
			"values":          map[string]any{"message": installMessage},
			"driftDetection":  map[string]any{"mode": "enabled"},
		},
	}}
	u.SetGroupVersionKind(s.gvk)
	u.SetNamespace(s.ns)
	u.SetName(appName(i))
	return u
}

var plumbSide = side{
	name:              "Plumb",
	gvk:               schema.GroupVersionKind{Group: "helm.plumb.dev", Version: "v2", Kind: "HelmRelease"},
	ns:                "plumb-bench",
	prefix:            "plumb-",
	chartRef:          map[string]any{"kind": "HelmChart", "name": chartName, "namespace": "plumb-bench"},
	requestAnnotation: "reconcile.plumb.dev/requestedAt",
	controllers:       []string{"source-controller", "render-controller", "sync-controller", "notification-controller"},
}

var fluxSide = side{
	name:              "Flux",
	gvk:               schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"},
	ns:                "flux-bench",
	prefix:            "flux-",
	chartRef:          map[string]any{"kind": "ExternalArtifact", "name": chartName, "namespace": "flux-bench"},
	requestAnnotation: "reconcile.fluxcd.io/requestedAt",
	controllers:       []string{helmControllerName},
}

// released says whether a HelmRelease has caught up with its spec: its
// status observes the current generation, Ready is True, and the newest
// entry of status.history (Flux's shape, which Plumb's follows) is a
// deployed release. The phases add what else they wait for.
func released(u *unstructured.Unstructured) bool {
	if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g != u.GetGeneration() {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	ready := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		og, hasGen := m["observedGeneration"].(int64)
		ready = m["status"] == "True" && (!hasGen || og == u.GetGeneration())
	}
	return ready && newest(u, "status") == "deployed"
}

// newest returns a field of the newest entry of status.history.
func newest(u *unstructured.Unstructured, field string) string {
	h, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	if len(h) == 0 {
		return ""
	}
	m, _ := h[0].(map[string]any)
	v, _ := m[field].(string)
	return v
}

// readyMessage is the Ready condition's status and message, for a report
// of what did not catch up.
func readyMessage(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			return fmt.Sprintf("Ready=%v %v: %.300v", m["status"], m["reason"], m["message"])
		}
	}
	return "no Ready condition"
}
