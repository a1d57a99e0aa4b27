package cmd

import (
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// syncWindowText words where a Kustomization or HelmRelease stands with
// its sync windows (status.syncWindow, sync-controller's): "open" unless a
// window keeps syncs out, then which windows, until when, the revision
// held and whether drift is still corrected.
func syncWindowText(obj client.Object, now time.Time) string {
	var st *kustomizev1.SyncWindowStatus
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		st = o.Status.SyncWindow
	case *helmv2.HelmRelease:
		st = o.Status.SyncWindow
	}
	if st == nil {
		return "open"
	}
	out := "closed by " + strings.Join(st.Windows, ", ")
	if st.NextOpen != nil {
		out += " until " + st.NextOpen.UTC().Format(time.RFC3339)
		if st.NextOpen.After(now) {
			out += " (in " + age(now, st.NextOpen.Time) + ")"
		}
	} else {
		out += ", no opening within a year"
	}
	if st.HeldRevision != "" {
		out += "; holding revision " + st.HeldRevision
	}
	if st.DriftCorrection {
		out += "; drift corrected"
	} else {
		out += "; drift only reported"
	}
	return out
}
