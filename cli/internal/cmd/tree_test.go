package cmd

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

func TestTree(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	web := webDeployment(ns)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	childCfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child-cfg"}}
	parent := kustomization(ns, "parent", "repo")
	child := kustomization(ns, "child", "repo")
	create(ctx, t, web, cfg, childCfg, parent, child)

	setStatus(ctx, t, child, func(o *kustomizev1.Kustomization) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "applied", o.Generation)}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "child-cfg"},
		}}
	})
	setStatus(ctx, t, parent, func(o *kustomizev1.Kustomization) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, "Deployment/web is not ready", o.Generation)}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "Namespace", Name: ns},
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"},
			{Version: "v1", Kind: "Secret", Namespace: ns, Name: "gone"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			{Group: kustomizev1.GroupVersion.Group, Version: "v1", Kind: "Kustomization", Namespace: ns, Name: "child"},
		}}
		o.Status.Drift = &kustomizev1.DriftStatus{Contested: []kustomizev1.ContestedDrift{{
			Object: "Deployment/" + ns + "/web", Fields: []string{"spec.replicas"}, Manager: "kube-controller-manager",
			Controller: "HorizontalPodAutoscaler/" + ns + "/web", Reverts: 6,
		}}}
	})

	r := plumb("tree", "kustomization", "parent", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	got := lines(r.out)
	want := []string{
		"Kustomization/" + ns + "/parent  Ready=False Deployment/web is not ready",
		"├── Namespace/" + ns + "  Healthy",
		"├── ConfigMap/" + ns + "/cfg  Healthy",
		"├── Secret/" + ns + "/gone  Missing",
		"├── Deployment/" + ns + "/web  Progressing",
		"└── Kustomization/" + ns + "/child  Healthy",
		"    └── ConfigMap/" + ns + "/child-cfg  Healthy",
	}
	g.Expect(got).To(HaveLen(len(want)), r.String())
	for i := range want {
		g.Expect(strings.HasPrefix(got[i], want[i])).To(BeTrue(), "line %d: %q does not start with %q", i, got[i], want[i])
	}
	g.Expect(got[4]).To(HaveSuffix("  ⚔ spec.replicas contested by field manager kube-controller-manager (HorizontalPodAutoscaler/" + ns + "/web), 6 revert(s), corrections backing off"))

	t.Run("healthCheckExprs judge the kinds they name", func(t *testing.T) {
		g := NewWithT(t)
		custom := kustomization(ns, "custom", "repo")
		custom.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{
			APIVersion: "v1", Kind: "ConfigMap",
			Failed:  "!has(data.mode)",
			Current: "data.mode == 'on'",
		}}
		flags := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flags"}, Data: map[string]string{"mode": "on"}}
		create(ctx, t, custom, flags)
		setStatus(ctx, t, custom, func(o *kustomizev1.Kustomization) {
			o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
				{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"},
				{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags"},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			}}
		})
		r := plumb("tree", "ks", "custom", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		got := lines(r.out)
		g.Expect(got).To(HaveLen(4), r.String())
		// cfg has no data at all: the expression cannot read it.
		g.Expect(got[1]).To(Equal("├── ConfigMap/" + ns + "/cfg  Unknown: healthCheckExprs[0] (v1 ConfigMap): failed: no such attribute(s): data.mode"))
		g.Expect(got[2]).To(Equal("├── ConfigMap/" + ns + "/flags  Healthy: healthCheckExprs[0] (v1 ConfigMap): current holds"))
		// A kind without an entry keeps pkg/health's rule.
		g.Expect(got[3]).To(HavePrefix("└── Deployment/" + ns + "/web  Progressing"))
	})
	t.Run("nothing applied yet", func(t *testing.T) {
		g := NewWithT(t)
		fresh := kustomization(ns, "fresh", "repo")
		create(ctx, t, fresh)
		r := plumb("tree", "ks", "fresh", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring("└── (no objects applied yet)"))
	})
	t.Run("not found", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("tree", "ks", "nothere", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError))
		g.Expect(r.errOut).To(ContainSubstring("Kustomization nothere not found"))
	})
}

// webDeployment is a Deployment "web" of one nginx container, as a
// Kustomization of the tests applies it.
func webDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}
