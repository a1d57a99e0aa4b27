package deploytest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// uiNeeds are the calls the ui server makes with its own ServiceAccount:
// ui/internal/overview.Watch's informers. Everything else it does is made
// with each user's token.
var uiNeeds = concat(
	watchOf(source, "gitrepositories", "overview.Watch"),
	watchOf(source, "helmrepositories", "overview.Watch"),
	watchOf(source, "helmcharts", "overview.Watch"),
	watchOf(kustomize, "kustomizations", "overview.Watch"),
	watchOf(helm, "helmreleases", "overview.Watch"),
	watchOf(image, "imagerepositories", "overview.Watch"),
	watchOf(image, "imagepolicies", "overview.Watch"),
	watchOf(image, "imageupdateautomations", "overview.Watch"),
	watchOf(set, "objectsets", "overview.Watch"),
)

// uiDenied: the UI's own identity writes nothing and reads no Secret; a
// user's action is the user's own write.
var uiDenied = []call{
	{group: kustomize, resource: "kustomizations", verb: "patch", namespace: tenant},
	{group: source, resource: "gitrepositories", verb: "patch", namespace: tenant},
	{group: image, resource: "imagepolicies", verb: "patch", namespace: tenant},
	{resource: "secrets", verb: "get", namespace: tenant},
	{resource: "secrets", verb: "list"},
	{group: apps, resource: "deployments", verb: "get", namespace: tenant},
}

// TestUIComponent renders deploy/ with components/ui as a user's overlay
// would: the ui Deployment listens where its container port says, reads
// NATS as the reader user (whom the NATS policy now lets in), and its
// ServiceAccount may watch the five kinds and do nothing else.
func TestUIComponent(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ctx := context.Background()
	objs, err := build(filepath.Join("testdata", "ui"))
	g.Expect(err).NotTo(HaveOccurred())

	d := typed[appsv1.Deployment](t, find(objs, "Deployment", "ui"))
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/plumb-dev/ui:latest"))
	g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("ui"))
	listen, _ := flagValue(c.Args, "listen")
	g.Expect(portByName(c, "http").ContainerPort).To(Equal(portOf(listen)))
	for flag, want := range map[string]string{"auth": "token", "nats-user": "reader", "nats-inbox-prefix": "_INBOX.reader"} {
		got, ok := flagValue(c.Args, flag)
		g.Expect(ok).To(BeTrue(), flag)
		g.Expect(got).To(Equal(want), flag)
	}
	g.Expect(find(objs, "Service", "ui")).NotTo(BeNil())
	nats := typed[networkingv1.NetworkPolicy](t, find(objs, "NetworkPolicy", "nats-clients"))
	g.Expect(nats.Spec.Ingress[0].From).To(ContainElement(HaveField("PodSelector.MatchLabels", HaveKeyWithValue("app.kubernetes.io/name", "ui"))))

	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment", "NetworkPolicy"} {
		name := "ui"
		if kind == "ClusterRole" || kind == "ClusterRoleBinding" {
			name = "plumb-ui"
		}
		o := find(objs, kind, name)
		g.Expect(o).NotTo(BeNil(), kind)
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, o.DeepCopy(), strict))).To(Succeed(), kind)
	}
	// The egress policy is valid as the API server sees it.
	egress := find(objs, "NetworkPolicy", "ui-egress")
	g.Expect(egress).NotTo(BeNil())
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, egress.DeepCopy(), strict))).To(Succeed())
	// The authorizer learns of the binding from a watch.
	g.Eventually(func() bool { return allowed(ctx, t, "ui", uiNeeds[0]) }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	for _, c := range uiNeeds {
		g.Expect(allowed(ctx, t, "ui", c)).To(BeTrue(), "%s (%s)", c, c.why)
	}
	for _, c := range uiDenied {
		g.Expect(allowed(ctx, t, "ui", c)).To(BeFalse(), "%s", c)
	}
}
