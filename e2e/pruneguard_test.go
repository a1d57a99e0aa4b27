package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// The story: a commit that leaves the sample's kustomization with
// `resources: []` deletes nothing. The Kustomization is Ready=False
// PruneGuarded naming 4 of 4 objects, Slack hears of it, every object stays;
// annotating the Kustomization with the render's digest lets it prune.
func TestEmptyCommitIsHeldUntilConfirmed(t *testing.T) {
	s := deploy(t, "e2e-empty")
	s.waitDeploymentAvailable()
	before := s.kustomization()

	s.edit("kustomization.yaml", "resources:\n  - namespace.yaml\n  - configmap.yaml\n  - migrate-job.yaml\n  - deployment.yaml\n  - service.yaml\n", "resources: []\n")
	sha := s.push("Empty the kustomization")
	s.waitRendered(sha)

	k := s.waitNotReady(func(g Gomega, k *kustomizev1.Kustomization) {
		g.Expect(readyCondition(k).Reason).To(Equal(kustomizev1.PruneGuardedReason), "Ready: %s", readyMessage(k))
		g.Expect(k.Status.LastAttemptedRevision).To(Equal(revision(sha)))
	})
	s.g.Expect(readyCondition(k).Message).To(ContainSubstring("would prune 4 of 4 objects (all of the inventory"))
	s.waitSlack(kustomizev1.PruneGuardedReason, "4 of 4")

	s.g.Expect(k.Status.LastAppliedRevision).To(Equal(before.Status.LastAppliedRevision))
	s.g.Expect(inventoryIDs(k.Status.Inventory)).To(ConsistOf(inventoryIDs(before.Status.Inventory)))
	for _, e := range k.Status.Inventory.Entries {
		obj := inventoryObject(e)
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "%s/%s/%s was deleted", e.Kind, e.Namespace, e.Name)
	}
	s.waitDeploymentAvailable()

	patch := client.MergeFrom(k.DeepCopy())
	k.Annotations = map[string]string{kustomizev1.ConfirmPruneAnnotation: k.Status.RenderedArtifact.Digest}
	s.g.Expect(env.Client.Patch(s.ctx, k, patch)).To(Succeed())
	applied := s.waitApplied(sha)
	s.g.Expect(inventoryIDs(applied.Status.Inventory)).To(BeEmpty())
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}, &corev1.ConfigMap{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the confirmed prune did not delete the ConfigMap")
}
