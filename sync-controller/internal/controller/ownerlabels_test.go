package controller

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// labelledConfigMap is a ConfigMap whose manifest carries both kinds'
// owner labels, naming an owner "app" in the namespace.
func labelledConfigMap(ns, name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {%[3]s: app, %[4]s: %[1]s, %[5]s: app, %[6]s: %[1]s, team: web}
data:
  key: value
`, ns, name, kustomizev1.NameLabel, kustomizev1.NamespaceLabel, helmv2.NameLabel, helmv2.NamespaceLabel)
}

// A chart that renders a Kustomization's owner labels, or Git that holds a
// HelmRelease's, does not hand the object to the other kind: the applied
// object carries its own owner's labels only.
func TestRenderedOwnerLabelsOfTheOtherKindAreNotApplied(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	renderRelease(t, hr, "1.0.0", "", labelledConfigMap(hr.Namespace, "from-chart"))
	waitReleaseReady(t, hr, "1.0.0")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hr.Namespace, Name: "from-chart"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(Equal(map[string]string{helmv2.NameLabel: "app", helmv2.NamespaceLabel: hr.Namespace, "team": "web"}))

	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:o1", labelledConfigMap(ks.Namespace, "from-git"))
	waitReady(t, ks, "main@sha1:o1")
	cm = &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "from-git"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(Equal(map[string]string{kustomizev1.NameLabel: "app", kustomizev1.NamespaceLabel: ks.Namespace, "team": "web"}))
}
