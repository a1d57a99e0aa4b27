package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/testenv"
)

// A HelmRelease's healthCheckExprs judge the kinds they name in the wait
// after a sync, as a Kustomization's: a Certificate whose failed
// expression holds fails the release (built-in rules would wait on it),
// and one whose current expression holds makes it Ready.
func TestHelmReleaseHealthCheckExprsJudgeACustomResource(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	group := installCertificateCRD(t, ctx, hr.Namespace)
	current := getRelease(g, hr)
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{
		APIVersion: group + "/v1",
		Kind:       "Certificate",
		Failed:     "status.conditions.exists(e, e.type == 'Ready' && e.status == 'False')",
		Current:    "status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')",
	}}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	cert := fmt.Sprintf("apiVersion: %s/v1\nkind: Certificate\nmetadata:\n  name: web-tls\n  namespace: %s\nspec:\n  secretName: web-tls\n", group, hr.Namespace)
	renderRelease(t, hr, "1.0.0", "{}", cert)

	// The Certificate exists before its status does: mark it failed as
	// soon as it is there.
	g.Eventually(func(g Gomega) {
		setCertificateReadyIfPresent(t, group, hr.Namespace, "web-tls", "False", "DoesNotExist")
		got := getRelease(g, hr)
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("healthCheckExprs[0] (%s/v1 Certificate): failed holds", group))
		g.Expect(conditions.IsFalse(got, kustomizev1.HealthyCondition)).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	setCertificateReady(t, ctx, group, hr.Namespace, "web-tls", "True", "Ready")
	requestRelease(t, hr)
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(conditions.IsTrue(got, kustomizev1.HealthyCondition)).To(BeTrue())
}

// setCertificateReadyIfPresent is setCertificateReady once the Certificate
// exists; before, it does nothing (a NotFound only; any other error fails).
func setCertificateReadyIfPresent(t *testing.T, group, ns, name, status, reason string) {
	t.Helper()
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion(group + "/v1")
	cert.SetKind("Certificate")
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cert)
	if apierrors.IsNotFound(err) {
		return
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	setCertificateReady(t, t.Context(), group, ns, name, status, reason)
}

// A HelmRelease with spec.kubeConfig releases into the remote cluster its
// Secret names, as a Kustomization does: the objects there and not here,
// the inventory and status here; a chart upgrade that drops an object
// prunes it there, and deleting the HelmRelease uninstalls there.
func TestHelmReleaseAppliesIntoTheRemoteClusterOfItsKubeConfig(t *testing.T) {
	g := NewWithT(t)
	remote, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })

	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.KubeConfig = &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: "remote"}}
	})
	ns := hr.Namespace
	g.Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	renderRelease(t, hr, "1.0.0", "{}", configMapIn(ns, "kept")+"---\n"+configMapIn(ns, "gone"))

	// No Secret yet: refused with the Kustomization's reason, nothing
	// applied anywhere.
	g.Eventually(func(g Gomega) {
		ready := conditions.Get(getRelease(g, hr), meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(kustomizev1.KubeConfigInvalidReason), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring("Secret " + ns + "/remote"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())
	g.Expect(notFoundIn(g, env.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())

	kubeConfigSecret(t, ctx, ns, "remote", "value", remote.Kubeconfig())
	requestRelease(t, hr)
	got := waitReleaseReady(t, hr, "1.0.0")
	for _, name := range []string{"kept", "gone"} {
		var cm corev1.ConfigMap
		g.Expect(remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
		g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NameLabel, hr.Name))
		g.Expect(notFoundIn(g, env.Client, client.ObjectKey{Namespace: ns, Name: name})).To(BeTrue(), "%s applied locally", name)
	}
	g.Expect(got.Status.Inventory).NotTo(BeNil())
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))

	// An upgrade that drops an object prunes it in the remote cluster.
	renderRelease(t, hr, "1.1.0", "{}", configMapIn(ns, "kept"))
	waitReleaseReady(t, hr, "1.1.0")
	g.Eventually(func(g Gomega) {
		g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "gone"})).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// Deleting the HelmRelease uninstalls there.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmRelease still there: %v", err)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}
