package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// A shard's sync-controller syncs its own Kustomizations only, even for a
// request that names another shard's — a managed object's watch event, an
// object that has just left the shard — since it reads each object past
// the shard's cache, from the API server.
func TestAShardSyncsOnlyItsOwnKustomizations(t *testing.T) {
	g := NewWithT(t)
	shard1, err := labels.Parse(meta.ShardKeyLabel + " in (shard1)")
	g.Expect(err).NotTo(HaveOccurred())
	stopController()
	stopController = startController(func(r *KustomizationReconciler) { r.Shard = shard1 })
	t.Cleanup(func() { stopController(); stopController = startController() })

	ctx, mine := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Labels = map[string]string{meta.ShardKeyLabel: "shard1"}
	})
	_, other := newKustomization(t, nil)
	render(t, mine, "main@sha1:1111", configMaps(mine.Namespace, "a"))
	render(t, other, "main@sha1:1111", configMaps(other.Namespace, "a"))
	waitReady(t, mine, "main@sha1:1111")

	_, err = running.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(other)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(other), got)).To(Succeed())
		g.Expect(got.Finalizers).To(BeEmpty(), "another shard's Kustomization was taken")
		g.Expect(conditions.Get(got, meta.ReadyCondition)).To(BeNil())
		g.Expect(got.Status.Inventory).To(BeNil())
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
}
