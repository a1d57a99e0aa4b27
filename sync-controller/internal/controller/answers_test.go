package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// A Kustomization that waits for nothing (no spec.wait, one wave, no
// health checks) judges no object's health, so its applies are answered
// with the objects' metadata only, a Deployment's too (engine.Options.
// NotWaitedOn); one that waits still gets the Deployment's whole answer,
// and is Ready only when the Deployment's status says it is available.
func TestWritesNobodyWaitsOnAreAnsweredWithMetadata(t *testing.T) {
	g := NewWithT(t)

	_, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:a1", configMaps(ns, "a")+"---\n"+deployment(ns, "web", 1))
	waitReady(t, ks, "main@sha1:a1")
	metadata := requests.MetadataAnswersUnder("/namespaces/" + ns + "/")
	g.Expect(metadata).To(HaveKeyWithValue("PATCH /apis/apps/v1/namespaces/"+ns+"/deployments/web", 1))
	g.Expect(metadata).To(HaveKeyWithValue("PATCH /api/v1/namespaces/"+ns+"/configmaps/a", 1))

	ctx, waiting := newKustomization(t, func(k *kustomizev1.Kustomization) { k.Spec.Wait = true })
	ns = waiting.Namespace
	render(t, waiting, "main@sha1:a2", configMaps(ns, "a")+"---\n"+deployment(ns, "web", 1))
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	g.Eventually(func() int { return requests.Count("PATCH", path, false) }, time.Minute, 50*time.Millisecond).Should(Equal(1))
	metadata = requests.MetadataAnswersUnder("/namespaces/" + ns + "/")
	g.Expect(metadata).NotTo(HaveKey("PATCH "+path), "the wait judges the Deployment from its whole answer")
	g.Expect(metadata).To(HaveKeyWithValue("PATCH /api/v1/namespaces/"+ns+"/configmaps/a", 1), "a ConfigMap's health is its existence")
	// No kube-controller-manager runs: the Deployment stays Progressing,
	// and so does the Kustomization, until its status says otherwise.
	g.Consistently(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(waiting), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeFalse())
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
	markDeploymentAvailable(t, ctx, ns, "web")
	got := waitReady(t, waiting, "main@sha1:a2")
	g.Expect(conditions.Get(got, kustomizev1.HealthyCondition)).To(HaveField("Status", metav1.ConditionTrue))
}
