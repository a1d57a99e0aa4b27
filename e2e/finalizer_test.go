package e2e

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/kinds"
)

// The install's admission policy (deploy/sync-controller/finalizer-policy.yaml)
// gives a Kustomization sync-controller's finalizer as it is created, so
// sync-controller never writes it; applying the Kustomization again
// without it keeps it; and the deletion still prunes the objects and
// releases the Kustomization, though no field manager owns the finalizer's
// entry (the API server records ownership before mutating admission runs,
// so no apply can take it out).
func TestFinalizerAddedAtAdmission(t *testing.T) {
	s := deploy(t, "e2e-finalizer")
	var err error
	k := s.kustomization()
	s.g.Expect(controllerutil.ContainsFinalizer(k, kustomizev1.SyncFinalizer)).To(BeTrue())
	for _, m := range k.ManagedFields {
		s.g.Expect(m.Manager).NotTo(Equal(kinds.FieldManager(kinds.SyncController, "finalizer")), "sync-controller wrote the finalizer itself")
	}

	// The demo's Kustomization applied again, by the manager that created
	// it, without the finalizer: a manager's apply leaves the entry alone.
	var again []byte
	for _, obj := range s.demo.Objects {
		if obj.GetKind() != "Kustomization" {
			continue
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
			"metadata": map[string]any{"namespace": obj.GetNamespace(), "name": obj.GetName()},
			"spec":     obj.Object["spec"],
		}}
		again, err = json.Marshal(u.Object)
		s.g.Expect(err).NotTo(HaveOccurred())
	}
	s.g.Expect(again).NotTo(BeEmpty())
	_, err = env.ApplyYAML(s.ctx, again)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(controllerutil.ContainsFinalizer(s.kustomization(), kustomizev1.SyncFinalizer)).To(BeTrue(), "a write without the finalizer keeps it")

	cmKey := types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}
	s.g.Expect(env.Client.Get(s.ctx, cmKey, &corev1.ConfigMap{})).To(Succeed())
	s.g.Expect(env.Client.Delete(s.ctx, s.kustomization())).To(Succeed())
	s.g.Eventually(func(g Gomega) bool {
		err := env.Client.Get(s.ctx, s.key, &kustomizev1.Kustomization{})
		g.Expect(client.IgnoreNotFound(err)).NotTo(HaveOccurred())
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the deleted Kustomization is released")
	err = env.Client.Get(s.ctx, cmKey, &corev1.ConfigMap{})
	s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "its ConfigMap is pruned (got %v)", err)
}
