package cmd

import (
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rolledOut writes dep's status as the Deployment controller does once
// every replica is updated and available.
func rolledOut(dep *appsv1.Deployment) {
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
}

func TestCheck(t *testing.T) {
	ctx, system := newNamespace(t)
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	version, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	crdLines := []string{
		"► checking the CRDs",
		"✔ gitrepositories.source.plumb.dev: v1 (stored as v1)",
		"✔ helmrepositories.source.plumb.dev: v1 (stored as v1)",
		"✔ helmcharts.source.plumb.dev: v1 (stored as v1)",
		"✔ ocirepositories.source.plumb.dev: v1 (stored as v1)",
		"✔ buckets.source.plumb.dev: v1 (stored as v1)",
		"✔ artifactgenerators.source.extensions.plumb.dev: v1beta1 (stored as v1beta1)",
		"✔ externalartifacts.source.plumb.dev: v1 (stored as v1)",
		"✔ kustomizations.kustomize.plumb.dev: v1 (stored as v1)",
		"✔ helmreleases.helm.plumb.dev: v2 (stored as v2)",
		"✔ objectsets.set.plumb.dev: v1 (stored as v1)",
		"✔ receivers.notification.plumb.dev: v1 (stored as v1)",
		"✔ alerts.notification.plumb.dev: v1 (stored as v1)",
		"✔ providers.notification.plumb.dev: v1 (stored as v1)",
		"✔ imagerepositories.image.plumb.dev: v1 (stored as v1)",
		"✔ imagepolicies.image.plumb.dev: v1 (stored as v1)",
		"✔ imageupdateautomations.image.plumb.dev: v1 (stored as v1)",
	}

	// Two controllers: one rolled out, one whose new pod is not available.
	create(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "plumb-config"}, Data: map[string]string{"nats-url": env.NATSURL}})
	deps := map[string]*appsv1.Deployment{}
	for _, name := range controllers {
		deps[name] = controllerDeployment(system, name, []string{"--nats-url=$(NATS_URL)"}, natsURLFromConfig)
	}
	create(ctx, t, deps["source-controller"], deps["sync-controller"])
	setStatus(ctx, t, deps["source-controller"], rolledOut)
	setStatus(ctx, t, deps["sync-controller"], func(d *appsv1.Deployment) {
		rolledOut(d)
		d.Status.AvailableReplicas = 0
	})

	r := plumb("check", "--controller-namespace", system)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	want := append([]string{
		"► checking the API server",
		"✔ Kubernetes " + version.GitVersion + " at " + env.Config.Host,
	}, crdLines...)
	want = append(want,
		"► checking the controllers in "+system,
		"✔ source-controller: 1/1 ready (source-controller)",
		"✗ render-controller: no Deployment "+system+"/render-controller",
		"✗ sync-controller: 0 of 1 replicas available (sync-controller)",
		"✗ notification-controller: no Deployment "+system+"/notification-controller",
		"✗ image-controller: no Deployment "+system+"/image-controller",
		"► checking NATS",
		"✔ NATS at "+env.NATSURL+" (the --nats-url of Deployment "+system+"/sync-controller): nats-server "+natsserver.VERSION+", JetStream enabled",
	)
	g.Expect(lines(r.out)).To(Equal(want))
	g.Expect(r.errOut).To(ContainSubstring("✗ 4 check(s) failed"))

	t.Run("everything installed and ready", func(t *testing.T) {
		g := NewWithT(t)
		create(ctx, t, deps["render-controller"], deps["notification-controller"], deps["image-controller"])
		for _, name := range []string{"render-controller", "sync-controller", "notification-controller", "image-controller"} {
			setStatus(ctx, t, deps[name], rolledOut)
		}
		r := plumb("check", "--controller-namespace", system)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).NotTo(ContainSubstring("✗"))
		g.Expect(lines(r.out)).To(ContainElements(
			"✔ render-controller: 1/1 ready (render-controller)",
			"✔ notification-controller: 1/1 ready (notification-controller)",
			"✔ all checks passed",
		))
	})

	t.Run("a new generation not rolled out yet", func(t *testing.T) {
		g := NewWithT(t)
		d := deps["render-controller"]
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Template.Spec.Containers[0].Image = "render-controller:v2"
		g.Expect(env.Client.Update(ctx, d)).To(Succeed())
		r := plumb("check", "--controller-namespace", system)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(lines(r.out)).To(ContainElement("✗ render-controller: generation 2 not yet observed by the Deployment controller (render-controller:v2)"))
		setStatus(ctx, t, d, rolledOut)
	})

	t.Run("NATS that this machine cannot reach", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: system, Name: "plumb-config"}, cm)).To(Succeed())
		cm.Data["nats-url"] = "nats://nats." + system + ":4222"
		g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
		r := plumb("check", "--controller-namespace", system)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.out).To(ContainSubstring("✗ NATS at nats://nats." + system + ":4222 (the --nats-url of Deployment " + system + "/sync-controller) is not reachable from here"))
		g.Expect(r.out).To(ContainSubstring("kubectl -n " + system + " port-forward svc/nats 4222:4222"))

		// --nats-url names the forwarded address.
		r = plumb("check", "--controller-namespace", system, "--nats-url", env.NATSURL)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring("✔ NATS at " + env.NATSURL + " (--nats-url): nats-server "))
	})

	t.Run("no controllers at all", func(t *testing.T) {
		g := NewWithT(t)
		_, empty := newNamespace(t)
		r := plumb("check", "--controller-namespace", empty)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(strings.Count(r.out, "✗ ")).To(Equal(6), r.out)
		g.Expect(r.out).To(ContainSubstring("✗ NATS: no controller Deployment has a --nats-url in " + empty))
	})
}
