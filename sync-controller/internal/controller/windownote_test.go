package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Ready's note while a sync window is closed says what becomes of drift
// as the policy that decides it says — the object's drift policy, its
// sync policy or the window — not the window's setting alone: a
// Kustomization whose driftPolicy is Report is never corrected, whatever
// the window allows.
func TestTheWindowNoteSaysWhatTheDriftPolicyDoes(t *testing.T) {
	until := metav1.NewTime(time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC))
	window := func(corrects bool) *kustomizev1.SyncWindowStatus {
		return &kustomizev1.SyncWindowStatus{Windows: []string{"spec.syncWindows[0]"}, NextOpen: &until, DriftCorrection: corrects}
	}
	ks := func(edit func(*kustomizev1.KustomizationSpec)) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{}
		edit(&k.Spec)
		return k
	}
	hr := func(mode string) *helmv2.HelmRelease {
		h := &helmv2.HelmRelease{}
		h.Spec.DriftDetection = &helmv2.DriftDetection{Mode: mode}
		return h
	}
	const closed = "; sync window spec.syncWindows[0] is closed until 2026-12-07T11:00:00Z, drift is "
	for _, c := range []struct {
		name   string
		spec   syncSpec
		window *kustomizev1.SyncWindowStatus
		want   string
	}{
		{"driftPolicy Correct, the window corrects", appOf(ks(func(*kustomizev1.KustomizationSpec) {})).spec(), window(true), closed + "corrected"},
		{"driftPolicy Correct, the window's driftCorrection false", appOf(ks(func(*kustomizev1.KustomizationSpec) {})).spec(), window(false), closed + "reported, not corrected"},
		{"driftPolicy Report, the window corrects", appOf(ks(func(s *kustomizev1.KustomizationSpec) { s.DriftPolicy = kustomizev1.DriftPolicyReport })).spec(), window(true), closed + "reported, not corrected"},
		{"syncPolicy Manual, the window corrects", appOf(ks(func(s *kustomizev1.KustomizationSpec) { s.SyncPolicy = kustomizev1.SyncPolicyManual })).spec(), window(true), closed + "reported, not corrected"},
		{"a HelmRelease's driftDetection warn", appOf(hr(helmv2.DriftDetectionWarn)).spec(), window(true), closed + "reported, not corrected"},
		{"a HelmRelease's driftDetection enabled", appOf(hr(helmv2.DriftDetectionEnabled)).spec(), window(true), closed + "corrected"},
		{"a HelmRelease's driftDetection disabled, the window's driftCorrection false", appOf(hr(helmv2.DriftDetectionDisabled)).spec(), window(false), closed + "neither corrected nor reported (drift detection is disabled)"},
		{"no window closed", appOf(ks(func(s *kustomizev1.KustomizationSpec) { s.DriftPolicy = kustomizev1.DriftPolicyReport })).spec(), nil, ""},
	} {
		if got := windowNote(c.window, c.spec); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
