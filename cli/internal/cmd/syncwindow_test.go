package cmd

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func TestSyncWindowText(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	opens := metav1.NewTime(time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC))
	held := &kustomizev1.SyncWindowStatus{HeldRevision: "main@sha1:2222", NextOpen: &opens, Windows: []string{"spec.syncWindows[0]"}, DriftCorrection: true}
	for _, tc := range []struct {
		name string
		st   *kustomizev1.SyncWindowStatus
		want string
	}{
		{"open", nil, "open"},
		{"holding", held, "closed by spec.syncWindows[0] until 2026-12-07T11:00:00Z (in 90m); holding revision main@sha1:2222; drift corrected"},
		{"nothing held, drift reported", &kustomizev1.SyncWindowStatus{Windows: []string{"SyncWindowPolicy/freeze.spec.windows[0]"}},
			"closed by SyncWindowPolicy/freeze.spec.windows[0], no opening within a year; drift only reported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := &kustomizev1.Kustomization{Status: kustomizev1.KustomizationStatus{SyncWindow: tc.st}}
			if got := syncWindowText(ks, now); got != tc.want {
				t.Errorf("Kustomization: %q, want %q", got, tc.want)
			}
			hr := &helmv2.HelmRelease{Status: helmv2.HelmReleaseStatus{SyncWindow: tc.st}}
			if got := syncWindowText(hr, now); got != tc.want {
				t.Errorf("HelmRelease: %q, want %q", got, tc.want)
			}
		})
	}
}
