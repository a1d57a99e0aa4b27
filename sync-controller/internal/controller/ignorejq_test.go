package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Argo CD's two other ways of naming ignored fields: a jq path expression
// that picks a container by name, and a field manager whose writes are
// its own. Their fields are neither reported nor reverted; a field they do
// not name still is.
func TestJQAndFieldManagerIgnoreRules(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Ignore = []kustomizev1.IgnoreRule{
			{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}, Target: &kustomizev1.Selector{Kind: "Deployment"}},
			{ManagedFieldsManagers: []string{"autoscaler"}},
		}
	})
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:7a7a", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:7a7a")

	patchDeployment(t, ctx, ks.Namespace, "web", "autoscaler", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) })
	patchDeployment(t, ctx, ks.Namespace, "web", "kubectl-set", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:hotfix"
	})
	requestReconcile(t, ks)
	requestReconcile(t, ks)
	g.Expect(replicas(ctx, ks.Namespace, "web")).To(Equal(int32(3)), "the autoscaler's replicas stay")
	g.Expect(image(ctx, g, ks.Namespace, "web")).To(Equal("registry.example/app:hotfix"), "the image the jq rule names stays")
	g.Expect(subscription.withReason(kustomizev1.DriftDetectedReason)).To(BeEmpty())

	// Someone else scales it: the autoscaler no longer owns the field, so
	// it is drift again and Git's value comes back.
	patchDeployment(t, ctx, ks.Namespace, "web", "kubectl-edit", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	g.Eventually(func() int32 { return replicas(ctx, ks.Namespace, "web") }, 30*time.Second, 50*time.Millisecond).Should(Equal(int32(1)))
	g.Expect(image(ctx, g, ks.Namespace, "web")).To(Equal("registry.example/app:hotfix"), "the correction leaves the ignored image")
	g.Eventually(func(g Gomega) {
		detected := subscription.withReason(kustomizev1.DriftDetectedReason)
		g.Expect(detected).NotTo(BeEmpty())
		for _, e := range detected {
			for _, c := range e.Changes {
				g.Expect(c.Path).To(Equal("spec.replicas"), "only the field no rule names is drift")
			}
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// patchDeployment changes a Deployment with a merge patch as manager.
func patchDeployment(t *testing.T, ctx context.Context, ns, name, manager string, change func(*appsv1.Deployment)) {
	t.Helper()
	g := NewWithT(t)
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	change(d)
	g.Expect(env.Client.Patch(ctx, d, patch, client.FieldOwner(manager))).To(Succeed())
}

func image(ctx context.Context, g Gomega, ns, name string) string {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	return d.Spec.Template.Spec.Containers[0].Image
}
