package deploytest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastFlag returns the value of the last --name=value in args: the one a
// controller takes (pflag keeps the last).
func lastFlag(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

// selectsPods reports whether svc's selector picks the pods of d.
func selectsPods(svc *corev1.Service, d *appsv1.Deployment) bool {
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			return false
		}
	}
	return len(svc.Spec.Selector) > 0
}

// TestShardingComponent renders deploy/ with components/sharding as a
// user's overlay would: besides the main instance, which now takes the
// objects without a shard key, each of shard1..3 runs the four controllers
// with its own selector, under the main instance's ServiceAccounts, with
// its artifact URLs naming a Service that routes to its pods alone, and
// with a durable NATS consumer of its own that the NATS users allow.
func TestShardingComponent(t *testing.T) {
	install(t)
	g := NewWithT(t)
	objs, err := build(filepath.Join("testdata", "sharding"))
	g.Expect(err).NotTo(HaveOccurred())
	base := buildBase(t)
	users := natsUsers(t, objs)

	instances := map[string]string{"main": "!sharding.plumb.dev/key"}
	for _, shard := range []string{"shard1", "shard2", "shard3"} {
		instances[shard] = "sharding.plumb.dev/key in (" + shard + ")"
	}
	deployments := ofKind(objs, "Deployment")
	services := ofKind(objs, "Service")
	consumers := map[string]string{}
	var created []*unstructured.Unstructured
	for instance, selector := range instances {
		for _, controller := range controllers {
			name := controller
			if instance != "main" {
				name += "-" + instance
			}
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				o := find(objs, "Deployment", name)
				g.Expect(o).NotTo(BeNil())
				d := typed[appsv1.Deployment](t, o)
				c := d.Spec.Template.Spec.Containers[0]
				got, _ := lastFlag(c.Args, "watch-label-selector")
				g.Expect(got).To(Equal(selector))
				main := typed[appsv1.Deployment](t, find(base, "Deployment", controller))
				g.Expect(c.Image).To(Equal(main.Spec.Template.Spec.Containers[0].Image), "the shards run the base's image")
				g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(controller), "a shard has the main instance's RBAC")
				g.Expect(d.Spec.Template.Labels).To(And(
					HaveKeyWithValue("app.kubernetes.io/name", controller), // the NetworkPolicies select it
					HaveKeyWithValue("app.kubernetes.io/instance", instance)))
				if instance != "main" {
					created = append(created, o)
				}

				service := map[string]string{"source-controller": "source-controller", "render-controller": "render-controller", "notification-controller": "webhook-receiver"}[controller]
				if service == "" {
					return
				}
				if instance != "main" {
					service += "-" + instance
				}
				if controller != "notification-controller" {
					adv, _ := lastFlag(c.Args, "storage-adv-addr")
					g.Expect(adv).To(Equal(service + ".$(RUNTIME_NAMESPACE).svc.cluster.local."))
				}
				// The Service that the URLs or webhooks name routes to this
				// instance's pods and no other's.
				for _, so := range services {
					svc := typed[corev1.Service](t, so)
					var routed []string
					for _, do := range deployments {
						if selectsPods(svc, typed[appsv1.Deployment](t, do)) {
							routed = append(routed, do.GetName())
						}
					}
					if svc.Name == service {
						g.Expect(routed).To(ConsistOf(name), "Service %s", svc.Name)
						if instance != "main" {
							created = append(created, so)
						}
					} else {
						g.Expect(routed).NotTo(ContainElement(name), "Service %s", svc.Name)
					}
				}
				if controller == "notification-controller" {
					consumer, ok := lastFlag(c.Args, "nats-consumer")
					g.Expect(ok).To(BeTrue(), "an explicit durable consumer, one that accounts.conf names")
					g.Expect(consumers).NotTo(HaveKey(consumer), "two instances share the durable consumer %s: each would get part of the events", consumer)
					consumers[consumer] = name
					user, _ := flagValue(c.Args, "nats-user")
					g.Expect(users[user].Permissions.Publish.Allow).To(ContainElements(
						"$JS.API.CONSUMER.CREATE.PLUMB_EVENTS."+consumer,
						"$JS.API.CONSUMER.MSG.NEXT.PLUMB_EVENTS."+consumer,
						"$JS.ACK.PLUMB_EVENTS."+consumer+".>"))
					g.Expect(users["reader"].Permissions.Publish.Deny).To(ContainElement("$JS.API.CONSUMER.MSG.NEXT.PLUMB_EVENTS."+consumer),
						"plumb events must not drain a shard's durable consumer")
				}
			})
		}
	}
	g.Expect(consumers).To(HaveLen(len(instances)))
	// The shards add Deployments and Services, and no ServiceAccount or RBAC.
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		g.Expect(ofKind(objs, kind)).To(HaveLen(len(ofKind(base, kind))), kind)
	}
	g.Expect(deployments).To(HaveLen(len(ofKind(base, "Deployment")) + 3*len(controllers)))
	// What the shards add is valid as the API server sees it.
	g.Expect(created).To(HaveLen(3 * (len(controllers) + 3)))
	for _, o := range created {
		g.Expect(env.Client.Create(context.Background(), o.DeepCopy(), client.DryRunAll, strict)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
}
