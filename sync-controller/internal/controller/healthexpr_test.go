package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// installCertificateCRD installs a Certificate kind of a group of the
// test's own, with a status subresource its controller (the test) writes,
// and returns the group.
func installCertificateCRD(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	g := NewWithT(t)
	group := "certs" + strings.TrimPrefix(ns, "sync-") + ".example.com"
	crd := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.%[1]s}
spec:
  group: %[1]s
  names: {kind: Certificate, plural: certificates, singular: certificate, listKind: CertificateList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group)), &crd.Object)).To(Succeed())
	g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	g.Eventually(func(g Gomega) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(crd.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), got)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return group
}

// setCertificateReady writes the Certificate's status as cert-manager
// would: a Ready condition at the object's generation.
func setCertificateReady(t *testing.T, ctx context.Context, group, ns, name, status, reason string) {
	t.Helper()
	g := NewWithT(t)
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion(group + "/v1")
	cert.SetKind("Certificate")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cert)).To(Succeed())
	patch := client.MergeFrom(cert.DeepCopy())
	g.Expect(unstructured.SetNestedSlice(cert.Object, []any{map[string]any{
		"type": "Ready", "status": status, "reason": reason, "observedGeneration": cert.GetGeneration(),
	}}, "status", "conditions")).To(Succeed())
	g.Expect(env.Client.Status().Patch(ctx, cert, patch)).To(Succeed())
}

func TestHealthCheckExprsDecideACustomResourcesHealth(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	})
	group := installCertificateCRD(t, ctx, ks.Namespace)
	// The group is the namespace's, known once the Kustomization exists: a
	// merge patch, which the controller's own writes do not conflict with.
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{
		APIVersion: group + "/v1",
		Kind:       "Certificate",
		Failed:     "status.conditions.exists(e, e.type == 'Ready' && e.observedGeneration == metadata.generation && e.status == 'False')",
		Current:    "status.conditions.exists(e, e.type == 'Ready' && e.observedGeneration == metadata.generation && e.status == 'True')",
	}}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	cert := fmt.Sprintf("apiVersion: %s/v1\nkind: Certificate\nmetadata:\n  name: web-tls\n  namespace: %s\nspec:\n  secretName: web-tls\n", group, ks.Namespace)
	render(t, ks, "main@sha1:cel", cert)

	// Without a status the expressions cannot be evaluated: the wait shows
	// why, and goes on. (Built-in rules would call it Healthy by existence.)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(ready.Message).To(ContainSubstring("Unknown: healthCheckExprs[0] (%s/v1 Certificate): failed: no such attribute(s): status.conditions", group))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// failed holds: Degraded, and the wait ends at once.
	setCertificateReady(t, ctx, group, ks.Namespace, "web-tls", "False", "DoesNotExist")
	msg := waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("is Degraded: healthCheckExprs[0] (%s/v1 Certificate): failed holds", group))
	g.Expect(msg).To(ContainSubstring("web-tls"))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(conditions.IsFalse(got, kustomizev1.HealthyCondition)).To(BeTrue())

	// current holds: Healthy, and the Kustomization Ready.
	setCertificateReady(t, ctx, group, ks.Namespace, "web-tls", "True", "Ready")
	requestReconcile(t, ks)
	got = waitReady(t, ks, "main@sha1:cel")
	g.Expect(conditions.IsTrue(got, kustomizev1.HealthyCondition)).To(BeTrue())
}

func TestAHealthCheckExprThatDoesNotParseStallsTheKustomization(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{
			APIVersion: "cert-manager.io/v1", Kind: "Certificate",
			Current: "status.conditions.exists(e, e.type == 'Ready'",
		}}
	})
	evs := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:bad", configMaps(ks.Namespace, "settings"))
	msg := waitNotReady(t, ks, kustomizev1.HealthCheckExprInvalidReason)
	g.Expect(msg).To(ContainSubstring(`healthCheckExprs[0] (cert-manager.io/v1 Certificate): current: "status.conditions.exists(e, e.type == 'Ready'" does not parse`))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
	g.Eventually(func() int { return len(evs.withReason(kustomizev1.HealthCheckExprInvalidReason)) }, time.Minute, 100*time.Millisecond).Should(BeNumerically(">", 0))
	// Nothing is applied by a spec whose health cannot be judged.
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "settings"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "want NotFound, got %v", err)
}
