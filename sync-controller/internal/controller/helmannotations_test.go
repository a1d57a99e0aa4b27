package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// A Kustomization whose Git holds `helm template` output syncs it as Argo
// CD does: Helm's install hooks on the first sync, its upgrade hooks on
// later ones, resource-policy keep and IfNotPresent honoured.
func TestKustomizationSyncsHelmTemplateOutput(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	set := func(cms ...string) string {
		return strings.Join([]string{
			helmHook(ns, "install-only", "pre-install", "0", "hook-succeeded"),
			helmHook(ns, "upgrade-only", "pre-upgrade", "0", "hook-succeeded"),
			helmTestPod(ns),
			keptConfigMap(ns, "kept"),
			configMaps(ns, cms...),
		}, "---\n")
	}
	render(t, ks, "main@sha1:t1", set("app"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "install-only") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "install-only", true)
	got := waitReady(t, ks, "main@sha1:t1")
	g.Expect(jobExists(ctx, g, ns, "upgrade-only")).To(BeFalse())
	g.Expect(exists(ctx, g, &corev1.Pod{}, ns, "test-connection")).To(BeFalse())
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2), "kept and app; no hook")

	render(t, ks, "main@sha1:t2", strings.Join([]string{
		helmHook(ns, "install-only", "pre-install", "0", "hook-succeeded"),
		helmHook(ns, "upgrade-only", "pre-upgrade", "0", "hook-succeeded"),
		configMaps(ns, "app"),
	}, "---\n"))
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "upgrade-only") }, 30*time.Second).Should(BeTrue())
	finishJob(t, ctx, ns, "upgrade-only", true)
	waitReady(t, ks, "main@sha1:t2")
	g.Expect(jobExists(ctx, g, ns, "install-only")).To(BeFalse(), "the install hook ran once")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "kept")).To(BeTrue(), "helm.sh/resource-policy: keep is never pruned")
}

func TestIfNotPresentCreatesButNeverChanges(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	subscription := subscribeEvents(t, ks)
	seed := func(value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\n  namespace: %s\n  annotations: {plumb.dev/ssa: IfNotPresent}\ndata:\n  key: %s\n", ns, value)
	}
	render(t, ks, "main@sha1:s1", seed("first"))
	waitReady(t, ks, "main@sha1:s1")
	g.Expect(configMapKey(ctx, ns, "seed")).To(Equal("first"), "created when missing")

	editConfigMap(t, ctx, ns, "seed", "edited")
	requestReconcile(t, ks)
	g.Expect(configMapKey(ctx, ns, "seed")).To(Equal("edited"), "a foreign change is no drift")
	render(t, ks, "main@sha1:s2", seed("second"))
	waitReady(t, ks, "main@sha1:s2")
	g.Expect(configMapKey(ctx, ns, "seed")).To(Equal("edited"), "a change in Git is not applied either")
	g.Expect(subscription.withReason(kustomizev1.DriftDetectedReason)).To(BeEmpty())

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seed"}, cm)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func() string { return configMapKey(ctx, ns, "seed") }, 30*time.Second, 50*time.Millisecond).Should(Equal("second"), "created again once missing")
}
