package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
)

// What the render reads of a Kustomization survives the cache's cut: the
// whole spec, the metadata (the requestedAt and event annotations, the
// finalizers, the deletion), the rendered artifact, the Rendered
// condition and the history's digests; sync-controller's part of the
// status and kubectl's last-applied annotation do not.
func TestTheCacheKeepsWhatTheRenderReads(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app", Namespace: "team", Generation: 3, UID: "u-1", DeletionTimestamp: &now,
			Labels:     map[string]string{"sharding.plumb.dev/key": "a"},
			Finalizers: []string{kustomizev1.SyncFinalizer, Finalizer},
			Annotations: map[string]string{
				meta.ReconcileRequestAnnotation:            "now",
				events.AnnotationPrefix + "change_request": "42",
				lastAppliedAnnotation:                      `{"spec":{"path":"./apps"}}`,
			},
		},
		Spec: kustomizev1.KustomizationSpec{
			Path:      "./apps",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"env": "prod"}},
		},
		Status: kustomizev1.KustomizationStatus{
			ObservedGeneration: 2,
			Conditions: []metav1.Condition{
				{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "applied"},
				{Type: kustomizev1.RenderedCondition, Status: metav1.ConditionTrue, Reason: kustomizev1.RenderSucceededReason, Message: "rendered 4 objects", ObservedGeneration: 3},
			},
			RenderedArtifact:    &meta.Artifact{Revision: "main@sha1:1", Digest: "sha256:a", URL: "http://x/a.yaml"},
			LastAppliedRevision: "main@sha1:0",
			History: meta.History{
				{Digest: "sha256:a", LastReconciledStatus: "Succeeded", TotalReconciliations: 4, Metadata: map[string]string{"revision": "main@sha1:1"}},
				{Digest: "sha256:b", LastReconciledStatus: "Failed"},
			},
			Inventory: &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"}}},
			Drift:     &kustomizev1.DriftStatus{Count: 1, Paths: []string{"ConfigMap/team/settings: .data.a"}},
		},
	}
	wantMeta := ks.ObjectMeta.DeepCopy()
	delete(wantMeta.Annotations, lastAppliedAnnotation)
	wantSpec := ks.Spec.DeepCopy()
	wantArtifact := ks.Status.RenderedArtifact.DeepCopy()
	wantRendered := ks.Status.Conditions[1]

	out, err := TrimKustomization(ks)
	g.Expect(err).NotTo(HaveOccurred())
	trimmed, ok := out.(*kustomizev1.Kustomization)
	g.Expect(ok).To(BeTrue())

	g.Expect(trimmed.ObjectMeta).To(Equal(*wantMeta))
	g.Expect(trimmed.Spec).To(Equal(*wantSpec))
	g.Expect(trimmed.Status).To(Equal(kustomizev1.KustomizationStatus{
		RenderedArtifact: wantArtifact,
		Conditions:       []metav1.Condition{wantRendered},
		History:          meta.History{{Digest: "sha256:a"}, {Digest: "sha256:b"}},
	}))
	g.Expect(historyDigests(trimmed)).To(Equal([]string{"sha256:a", "sha256:b"}))
	g.Expect(renderedCondition(trimmed)).To(Equal(&wantRendered))

	// What is not a Kustomization passes as it is.
	other := &kustomizev1.KustomizationList{}
	same, err := TrimKustomization(other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeIdenticalTo(other))
}

// Of a ConfigMap's metadata the cache keeps what names and versions it;
// a whole ConfigMap passes as it is.
func TestTheCacheKeepsAConfigMapsNameAndVersion(t *testing.T) {
	g := NewWithT(t)
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "settings", Namespace: "team", UID: "u-2", ResourceVersion: "7",
			Labels:          map[string]string{"plumb.dev/name": "app"},
			Annotations:     map[string]string{lastAppliedAnnotation: "{}"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "api"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "plumb-sync"}},
		},
	}
	out, err := TrimConfigMapMetadata(m)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(&metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team", UID: "u-2", ResourceVersion: "7"},
	}))

	whole := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}}
	same, err := TrimConfigMapMetadata(whole)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeIdenticalTo(whole))
	g.Expect(whole.Labels).To(HaveKey("a"))
}
