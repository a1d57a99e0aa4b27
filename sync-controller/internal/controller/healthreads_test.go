package controller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/manage"
)

// A health wait wakes on a change of any managed object, most of them
// another application's; it reads again only the pending objects that
// changed. Here a Deployment waits for its rollout while another
// namespace's managed ConfigMap changes 40 times: the wait must not read
// the unchanged Deployment on each of those wake-ups (it did, 70 GETs per
// release when a hundred HelmReleases rolled out at once,
// docs/bench/helm-release.md), and must still see the rollout finish.
func TestAHealthWaitReadsOnlyTheObjectsThatChanged(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:h1", deployment(ns, "web", 1)+"---\n"+waveConfigMap(ns, "after-web", 1))
	g.Eventually(func() *kustomizev1.SyncProgress { return syncProgress(ctx, ks) }, 30*time.Second).Should(And(
		Not(BeNil()), HaveField("Phase", kustomizev1.PhaseSync), HaveField("Wave", 0)))

	// A managed object of nobody's, elsewhere: each write wakes the wait.
	other, err := env.Namespace(ctx, "noise")
	g.Expect(err).NotTo(HaveOccurred())
	nameKey, namespaceKey := manage.LabelKeys(kustomizev1.KustomizationKind)
	// A Deployment: its kind is watched already (the ConfigMap's informer
	// starts only with wave 1).
	labels := map[string]string{"app": "noise"}
	noise := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "noise", Namespace: other,
			Labels: map[string]string{nameKey: "nobody", namespaceKey: other},
		},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/noise:1.0"}}},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, noise)).To(Succeed())

	before := requestsByKind(ns)["get deployments"]
	const writes = 40
	for i := range writes {
		noise.Annotations = map[string]string{"n": fmt.Sprint(i)}
		g.Expect(env.Client.Update(ctx, noise)).To(Succeed())
		time.Sleep(20 * time.Millisecond)
	}
	reads := requestsByKind(ns)["get deployments"] - before
	t.Logf("GETs of the waiting Deployment during %d writes elsewhere: %d", writes, reads)
	// Rounds woken by the fallback timer (HealthPollFallback) read again on
	// purpose; the 40 wake-ups by the writes must not.
	g.Expect(reads).To(BeNumerically("<", writes/4))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "after-web")).To(BeFalse(), "wave 1 still waits for the Deployment")

	markDeploymentAvailable(t, ctx, ns, "web")
	waitReady(t, ks, "main@sha1:h1")
	g.Expect(exists(ctx, g, &appsv1.Deployment{}, ns, "web")).To(BeTrue())
}
