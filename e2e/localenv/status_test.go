package localenv

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/kinds"
)

// A status line says, before the Ready message, what the object runs or
// serves, whatever its kind: it is read from what the kind implements.
func TestAStatusLineSaysWhatEachKindRunsOrServes(t *testing.T) {
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "ok"}}
	inv := &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Name: "cm", Namespace: "demo", Version: "v1", Kind: "ConfigMap"}}}
	for _, tc := range []struct {
		obj     client.Object
		want    StatusLine
		wantInv *kustomizev1.Inventory
	}{
		{
			obj: &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "app"},
				Status: sourcev1.GitRepositoryStatus{Conditions: ready, Artifact: &meta.Artifact{Revision: "main@sha1:abc"}}},
			want: StatusLine{Kind: sourcev1.GitRepositoryKind, Name: "demo/app", Status: "Ready", Detail: "main@sha1:abc  ok"},
		},
		{
			// A source the old switch did not name.
			obj: &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "manifests"},
				Status: sourcev1.OCIRepositoryStatus{Conditions: ready, Artifact: &meta.Artifact{Revision: "v1@sha256:def"}}},
			want: StatusLine{Kind: sourcev1.OCIRepositoryKind, Name: "demo/manifests", Status: "Ready", Detail: "v1@sha256:def  ok"},
		},
		{
			// The last applied revision, not the rendered artifact's.
			obj: &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "app"},
				Status: kustomizev1.KustomizationStatus{Conditions: ready, LastAppliedRevision: "main@sha1:abc",
					RenderedArtifact: &meta.Artifact{Revision: "main@sha1:new"}, Inventory: inv,
					Sync: &kustomizev1.SyncProgress{Phase: kustomizev1.PhasePostSync, Wave: 2}}},
			want:    StatusLine{Kind: kustomizev1.KustomizationKind, Name: "demo/app", Status: "Ready", Detail: "[PostSync wave 2] main@sha1:abc  ok"},
			wantInv: inv,
		},
		{
			obj: &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "hello"},
				Status: helmv2.HelmReleaseStatus{Conditions: ready, LastAppliedRevision: "1.2.3", Inventory: inv,
					Sync: &kustomizev1.SyncProgress{Phase: kustomizev1.PhaseSucceeded, Wave: 1}}},
			want:    StatusLine{Kind: helmv2.HelmReleaseKind, Name: "demo/hello", Status: "Ready", Detail: "chart 1.2.3  ok"},
			wantInv: inv,
		},
		{
			obj: &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "github"},
				Status: notificationv1.ReceiverStatus{Status: notificationv1.Status{Conditions: ready}, WebhookPath: "/hook/0123"}},
			want: StatusLine{Kind: notificationv1.ReceiverKind, Name: "demo/github", Status: "Ready", Detail: "/hook/0123  ok"},
		},
		{
			obj:  &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "slack"}},
			want: StatusLine{Kind: notificationv1.AlertKind, Name: "demo/slack", Status: "Unknown", Detail: "not reconciled yet"},
		},
	} {
		t.Run(tc.want.Kind, func(t *testing.T) {
			g := NewWithT(t)
			k, ok := kinds.Of(tc.obj)
			g.Expect(ok).To(BeTrue())
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.obj)
			g.Expect(err).NotTo(HaveOccurred())
			live := &unstructured.Unstructured{Object: m}
			live.SetGroupVersionKind(k.GVK)

			line, gotInv := objectLine(k, live)
			g.Expect(line).To(Equal(tc.want))
			g.Expect(gotInv).To(Equal(tc.wantInv))
		})
	}
}
