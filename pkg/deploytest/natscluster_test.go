package deploytest

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNATSClusterComponent renders deploy/ with components/nats-cluster as
// a user's overlay would, and reads the result as the servers and the
// controllers will: three NATS servers started together, each named after
// its pod and routed to all three by their stable names under a headless
// Service, with JetStream on its volume and deploy/nats's users; the
// servers reach each other on the cluster port and nobody else does; every
// controller, the shards' too, is given the three servers and keeps the
// stream on three of them.
func TestNATSClusterComponent(t *testing.T) {
	install(t)
	g := NewWithT(t)
	objs, err := build(filepath.Join("testdata", "nats-cluster"))
	g.Expect(err).NotTo(HaveOccurred())

	sts := typed[appsv1.StatefulSet](t, find(objs, "StatefulSet", "nats"))
	g.Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement), "a server is ready only with the others up")
	server := sts.Spec.Template.Spec.Containers[0]

	// The governing Service is headless, publishes pods before they are
	// ready, and routes both ports to ports the pods have.
	svc := typed[corev1.Service](t, find(objs, "Service", sts.Spec.ServiceName))
	g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
	for k, v := range svc.Spec.Selector {
		g.Expect(sts.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
	}
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		c := portByName(server, p.TargetPort.String())
		g.Expect(c).NotTo(BeNil(), "Service port %s targets no port of the pod", p.Name)
		g.Expect(c.ContainerPort).To(Equal(p.Port))
		ports[p.Name] = p.Port
	}
	g.Expect(ports).To(HaveKey("client"))
	g.Expect(ports).To(HaveKey("cluster"))
	// The stable name of pod i, as the cluster's DNS gives it.
	podHost := func(i int, port int32) string {
		return fmt.Sprintf("nats-%d.%s.%s.svc:%d", i, svc.Name, namespace, port)
	}

	// Each server, read as nats-server reads its configuration in its pod.
	for i := range int(*sts.Spec.Replicas) {
		pod := fmt.Sprintf("nats-%d", i)
		t.Run(pod, func(t *testing.T) {
			g := NewWithT(t)
			opts := natsOptions(t, objs, pod)
			g.Expect(opts.ServerName).To(Equal(pod))
			g.Expect(opts.JetStream).To(BeTrue())
			g.Expect(opts.Port).To(BeEquivalentTo(ports["client"]))
			g.Expect(opts.Cluster.Name).NotTo(BeEmpty())
			g.Expect(opts.Cluster.Port).To(BeEquivalentTo(ports["cluster"]))
			var routes []string
			for _, r := range opts.Routes {
				routes = append(routes, r.Host)
			}
			var want []string
			for j := range int(*sts.Spec.Replicas) {
				want = append(want, podHost(j, ports["cluster"]))
			}
			g.Expect(routes).To(ConsistOf(want), "a route to every server")
		})
	}
	users := natsUsers(t, objs)
	g.Expect(users).To(HaveKey("publisher"), "deploy/nats's users")

	// The servers reach each other on the cluster port, nobody else does.
	pods := workloads(t, objs)
	policies := policiesOf(t, objs, pods)
	nats := pods["nats"]
	g.Expect(reachable(t, policies, nats, nats, ports["cluster"], corev1.ProtocolTCP)).To(BeTrue(), "nats to nats on the cluster port")
	stranger := endpoint{name: "a pod in plumb-system", namespace: namespace, nsLabels: nats.nsLabels, labels: map[string]string{"app": "debug"}}
	for _, src := range []endpoint{stranger, pods["sync-controller"], pods["notification-controller"]} {
		g.Expect(reachable(t, policies, src, nats, ports["cluster"], corev1.ProtocolTCP)).To(BeFalse(), "%s reaches the cluster port", src.name)
	}
	g.Expect(reachable(t, policies, pods["sync-controller"], nats, ports["client"], corev1.ProtocolTCP)).To(BeTrue())

	// Every controller is given the three servers by their stable names,
	// and keeps the stream on all three.
	var want []string
	for i := range int(*sts.Spec.Replicas) {
		want = append(want, podHost(i, ports["client"]))
	}
	checkControllers(t, objs, controllers, want)

	// The shards of components/sharding, listed before it, are given the
	// cluster too.
	sharded, err := build(filepath.Join("testdata", "nats-cluster-sharding"))
	g.Expect(err).NotTo(HaveOccurred())
	var all []string
	for _, d := range ofKind(sharded, "Deployment") {
		all = append(all, d.GetName())
	}
	g.Expect(all).To(ContainElement("sync-controller-shard3"))
	checkControllers(t, sharded, all, want)

	// What the component adds is valid as the API server sees it.
	ctx := context.Background()
	for _, kind := range []string{"Service", "PodDisruptionBudget", "NetworkPolicy"} {
		for _, o := range ofKind(objs, kind) {
			if find(buildBase(t), kind, o.GetName()) != nil {
				continue
			}
			g.Expect(env.Client.Create(ctx, o.DeepCopy(), client.DryRunAll, strict)).To(Succeed(), "%s %s", kind, o.GetName())
		}
	}
	fresh := find(objs, "StatefulSet", "nats").DeepCopy()
	fresh.SetName("nats-fresh-install")
	g.Expect(env.Client.Create(ctx, fresh, client.DryRunAll, strict)).To(Succeed(), "the StatefulSet of a fresh install")
	// And an install that runs the single server must recreate the
	// StatefulSet, as the component's comment says.
	live := find(objs, "StatefulSet", "nats").DeepCopy()
	current := typed[appsv1.StatefulSet](t, find(buildBase(t), "StatefulSet", "nats"))
	var got appsv1.StatefulSet
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(current), &got)).To(Succeed())
	live.SetResourceVersion(got.ResourceVersion)
	err = env.Client.Update(ctx, live, client.DryRunAll)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "updating the single server's StatefulSet in place: %v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("spec.serviceName"), ContainSubstring("spec.podManagementPolicy"), ContainSubstring("field is immutable")))
}

// checkControllers: each Deployment named in names takes plumb-config's
// nats-url, which lists exactly the servers in want, and keeps three
// copies of the stream.
func checkControllers(t *testing.T, objs []*unstructured.Unstructured, names []string, want []string) {
	t.Helper()
	g := NewWithT(t)
	cm := typed[corev1.ConfigMap](t, find(objs, "ConfigMap", "plumb-config"))
	var hosts []string
	for _, one := range strings.Split(cm.Data["nats-url"], ",") {
		u, err := url.Parse(one)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(u.Scheme).To(Equal("nats"))
		hosts = append(hosts, u.Host)
	}
	g.Expect(hosts).To(ConsistOf(want), "plumb-config's nats-url")
	for _, name := range names {
		d := typed[appsv1.Deployment](t, find(objs, "Deployment", name))
		c := d.Spec.Template.Spec.Containers[0]
		replicas, _ := lastFlag(c.Args, "nats-stream-replicas")
		g.Expect(replicas).To(Equal("3"), name)
		u, _ := lastFlag(c.Args, "nats-url")
		g.Expect(u).To(Equal("$(NATS_URL)"), name)
		g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "NATS_URL"),
			HaveField("ValueFrom.ConfigMapKeyRef.Key", "nats-url"),
			HaveField("ValueFrom.ConfigMapKeyRef.LocalObjectReference.Name", "plumb-config"))), name)
	}
}
