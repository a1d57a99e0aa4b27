package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/ui/server"
)

func TestReconcileWithSourceOfAHelmReleaseRequestsItsChartAndTheChartsSource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "helm")
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec:       sourcev1.HelmRepositorySpec{URL: "https://charts.example.com/podinfo", Interval: metav1.Duration{Duration: time.Hour}},
	}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo", Version: "1.x",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}}},
	}
	// The HelmChart render-controller would create for spec.chart.
	chart := &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hr.GetHelmChartName()},
		Spec: sourcev1.HelmChartSpec{Chart: "podinfo", Version: "1.x", Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}},
	}
	create(t, repo, hr, chart)

	// Kubeconfig mode: the kubeconfig's user (here the administrator).
	srv := start(t, server.AuthKubeconfig, false)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"secret": srv.LoginSecret()})
	status, data, _ := b.do(http.MethodPost, "/api/objects/helmrelease/"+ns+"/podinfo/reconcile", map[string]any{"withSource": true})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	for _, obj := range []client.Object{&helmv2.HelmRelease{}, &sourcev1.HelmChart{}, &sourcev1.HelmRepository{}} {
		key := client.ObjectKey{Namespace: ns, Name: "podinfo"}
		if _, isChart := obj.(*sourcev1.HelmChart); isChart {
			key.Name = chart.Name
		}
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKey(meta.ReconcileRequestAnnotation), "%T", obj)
	}

	var page overviewPage
	status, data, _ = b.do(http.MethodGet, "/api/overview?kind=helmrelease&namespace="+ns, nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.Total).To(Equal(1))
	g.Expect(page.Items[0].Kind).To(Equal(helmv2.HelmReleaseKind))
}

// An ExternalArtifact is refreshed by the program that writes it: the
// sync button with its source requests the Kustomization only, and leaves
// the ExternalArtifact as its producer wrote it.
func TestReconcileWithSourceOfAKustomizationLeavesItsExternalArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "external")
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "app"}},
	}
	create(t, ea, ks)

	srv := start(t, server.AuthKubeconfig, false)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"secret": srv.LoginSecret()})
	status, data, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/app/reconcile", map[string]any{"withSource": true})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.GetAnnotations()).To(HaveKey(meta.ReconcileRequestAnnotation))
	g.Expect(env.Client.Get(ctx, key, ea)).To(Succeed())
	g.Expect(ea.GetAnnotations()).NotTo(HaveKey(meta.ReconcileRequestAnnotation))
}
