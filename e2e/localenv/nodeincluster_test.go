package localenv

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A real node's Pod finds the cluster as in any cluster: a Service by its
// DNS name through CoreDNS, and the API server through the `kubernetes`
// Service's IP (kube-proxy to the bridge's address, forwarded by the
// launcher) and by kubernetes.default.svc, with the ServiceAccount token
// the kubelet projected, verified against the kube-root-ca.crt ConfigMap
// that kube-controller-manager published. The Pod runs as Plumb's do.
func TestARealNodesPodsReachTheAPIServerAndServicesByName(t *testing.T) {
	ctx, g, env, ns := onSharedNode(t, "incluster", 10*time.Minute)

	// The Service's endpoint is the API server's forwarded address.
	slices := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, slices, client.InNamespace("default"),
		client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"})).To(Succeed())
	g.Expect(slices.Items).To(HaveLen(1))
	g.Expect(slices.Items[0].Endpoints).To(ConsistOf(HaveField("Addresses", ConsistOf(nodeIP))))
	g.Expect(env.Node.APIServerAddr).To(HavePrefix(nodeIP + ":"))

	deploy, _, _ := deployEcho(ctx, g, env, ns)
	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/incluster", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "incluster", Namespace: ns},
		Spec: batchv1.JobSpec{
			// The echo Service may have no ready endpoint yet.
			BackoffLimit: ptr.To[int32](6),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name:  "incluster",
					Image: image,
					// A name the search domains complete, as deploy/'s
					// nats://nats.plumb-system:4222.
					Env:             []corev1.EnvVar{{Name: "TARGET", Value: "http://echo." + ns + "/"}},
					SecurityContext: asPlumbRuns(),
				}},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, job)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		return podReport(ctx, env, ns) + terminationMessages(ctx, env, ns) + "\n" + Tail(env.Node.DNS.LogPath, 10)
	})
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"job-name": "incluster"})).To(Succeed())
	var msg string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			msg = p.Status.ContainerStatuses[0].State.Terminated.Message
		}
	}
	t.Logf("the Pod found:\n%s", msg)
	g.Expect(msg).To(ContainSubstring("service: hello from " + deploy.Name + "-"))
	g.Expect(msg).To(ContainSubstring("api 10.0.0.1:443: system:serviceaccount:" + ns + ":default"))
	g.Expect(msg).To(ContainSubstring("api kubernetes.default.svc: system:serviceaccount:" + ns + ":default"))
}

// terminationMessages are the messages of namespace's terminated
// containers, for a failed wait's message.
func terminationMessages(ctx context.Context, env *Env, namespace string) string {
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return err.Error()
	}
	var out string
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				out += p.Name + ": " + cs.State.Terminated.Message + "\n"
			}
		}
	}
	return out
}
