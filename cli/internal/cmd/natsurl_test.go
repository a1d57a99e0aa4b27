package cmd

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
)

// controllerDeployment is a controller's Deployment as deploy/ writes it,
// with args and env for its one container.
func controllerDeployment(ns, name string, args []string, env ...corev1.EnvVar) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "manager", Image: name, Args: args, Env: env,
				}}},
			},
		},
	}
}

// natsURLFromConfig is deploy/'s NATS_URL: the ConfigMap plumb-config's
// key nats-url.
var natsURLFromConfig = corev1.EnvVar{Name: "NATS_URL", ValueFrom: &corev1.EnvVarSource{
	ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "plumb-config"}, Key: "nats-url"},
}}

// readerAuth is natsFlags without --nats-url.
func readerAuth(extra ...string) []string { return append(natsFlags()[2:], extra...) }

func TestEventsFindsTheControllersNATS(t *testing.T) {
	ctx, ns := newNamespace(t)
	_, system := newNamespace(t)
	applied := event("Kustomization", ns, "app", events.SeverityInfo, kustomizev1.AppliedReason, "found through the Deployment", 0)
	publish(t, applied)
	want := "2026-11-25T10:00:00Z  info   Kustomization/" + ns + "/app  Applied  found through the Deployment"

	// deploy/: the Deployment's --nats-url=$(NATS_URL), from plumb-config.
	create(ctx, t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "plumb-config"}, Data: map[string]string{"nats-url": env.NATSURL}},
		controllerDeployment(system, "sync-controller", []string{"--enable-leader-election", "--nats-url=$(NATS_URL)", "--nats-user=publisher"}, natsURLFromConfig),
	)

	g := NewWithT(t)
	r := plumb(append([]string{"events", "--controller-namespace", system, "--for", "Kustomization/app", "-n", ns}, readerAuth()...)...)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(Equal([]string{want}))
	g.Expect(r.errOut).To(BeEmpty())

	t.Run("an in-cluster address that this machine cannot reach", func(t *testing.T) {
		g := NewWithT(t)
		_, remote := newNamespace(t)
		create(ctx, t,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "plumb-config"}, Data: map[string]string{"nats-url": "nats://nats." + remote + ":4222"}},
			controllerDeployment(remote, "notification-controller", []string{"--nats-url", "$(NATS_URL)"}, natsURLFromConfig),
		)
		start := time.Now()
		r := plumb(append([]string{"events", "--controller-namespace", remote}, readerAuth()...)...)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("NATS at nats://nats." + remote + ":4222 (the --nats-url of Deployment " + remote + "/notification-controller) is not reachable from here"))
		g.Expect(r.errOut).To(ContainSubstring("kubectl -n " + remote + " port-forward svc/nats 4222:4222"))
		g.Expect(r.errOut).To(ContainSubstring("--nats-url nats://127.0.0.1:4222"))
		g.Expect(time.Since(start)).To(BeNumerically("<", 15*time.Second))

		// --nats-url, and then $PLUMB_NATS_URL, win over the cluster's.
		r = plumb(append([]string{"events", "--controller-namespace", remote, "--nats-url", env.NATSURL, "--for", "Kustomization/app", "-n", ns}, readerAuth()...)...)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{want}))
		t.Setenv(natsURLEnv, env.NATSURL)
		r = plumb(append([]string{"events", "--controller-namespace", remote, "--for", "Kustomization/app", "-n", ns}, readerAuth()...)...)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{want}))
	})

	t.Run("a ConfigMap key that is missing", func(t *testing.T) {
		g := NewWithT(t)
		_, broken := newNamespace(t)
		create(ctx, t, controllerDeployment(broken, "sync-controller", []string{"--nats-url=$(NATS_URL)"}, natsURLFromConfig))
		r := plumb(append([]string{"events", "--controller-namespace", broken}, readerAuth()...)...)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("the --nats-url of Deployment " + broken + "/sync-controller ($(NATS_URL)): $(NATS_URL) comes from ConfigMap " + broken + "/plumb-config"))
		g.Expect(r.errOut).To(ContainSubstring("not found"))
	})

	t.Run("no controller Deployments: the default address", func(t *testing.T) {
		g := NewWithT(t)
		_, empty := newNamespace(t)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r := plumbCtx(cctx, append([]string{"events", "--controller-namespace", empty}, readerAuth()...)...)
		g.Expect(r.errOut).To(ContainSubstring("note: no controller Deployment has a --nats-url in " + empty + "; trying nats://127.0.0.1:4222"))
	})
}
