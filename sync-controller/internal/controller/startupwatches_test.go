package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// After a restart, the drift informer of a kind a stored inventory names
// has listed before /readyz says ready, and a foreign edit made right
// after readiness is a watch event — queued for its Kustomization while
// that Kustomization's own start-up reconcile is still held — and is
// corrected. LimitRange is a kind no other test applies, so no other
// Kustomization's start-up reconcile starts its informer first.
func TestARestartedControllerWatchesTheStoredInventoriesBeforeItIsReady(t *testing.T) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	manifests := `apiVersion: v1
kind: LimitRange
metadata:
  name: limits
  namespace: ` + ks.Namespace + `
spec:
  limits:
  - type: Container
    default:
      cpu: 200m
`
	render(t, ks, "main@sha1:1", manifests)
	waitReady(t, ks, "main@sha1:1")

	// The restarted controller's start-up reconcile of ks waits on its
	// artifact until released: until then, only the drift watch can see
	// an edit.
	stopController()
	// The first controller downloaded the artifact too: only a download
	// past its count is the restarted controller's start-up reconcile.
	before := artifacts.downloads(artifactPath(ks, manifests))
	release := artifacts.hold(t, artifactPath(ks, manifests))
	stopController = startController()
	g.Eventually(runningReadyz.ready, time.Minute, 10*time.Millisecond).Should(Succeed())
	watcher := running.Engine.Watcher()
	g.Expect(watcher.Watching(corev1.SchemeGroupVersion.WithKind("LimitRange"))).To(BeTrue(),
		"the informer of a kind of the stored inventory has listed when the controller says ready")
	g.Eventually(func() int { return artifacts.downloads(artifactPath(ks, manifests)) }, time.Minute, 10*time.Millisecond).
		Should(BeNumerically(">", before), "the start-up reconcile is held on its download")

	lr := &corev1.LimitRange{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "limits"}, lr)).To(Succeed())
	patch := client.MergeFrom(lr.DeepCopy())
	lr.Spec.Limits[0].Default[corev1.ResourceCPU] = resource.MustParse("300m")
	g.Expect(env.Client.Patch(ctx, lr, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())

	key := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	g.Eventually(func() bool { return watcher.DriftPending(key) }, 30*time.Second, 10*time.Millisecond).Should(BeTrue(),
		"the edit is a watch event while the start-up reconcile is still held")

	release()
	g.Eventually(func(g Gomega) {
		got := &corev1.LimitRange{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(lr), got)).To(Succeed())
		cpu := got.Spec.Limits[0].Default[corev1.ResourceCPU]
		g.Expect(cpu.String()).To(Equal("200m"))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
}

// The kinds the start-up watches start: each distinct kind of the local
// inventories once, a remote owner's left out (its objects are in another
// cluster).
func TestInventoryKindsAreDistinctAndLocal(t *testing.T) {
	entry := func(group, version, kind string) kustomizev1.InventoryEntry {
		return kustomizev1.InventoryEntry{Group: group, Version: version, Kind: kind, Namespace: "a", Name: "x"}
	}
	owners := []storedInventory{
		{inventory: &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{entry("", "v1", "ConfigMap"), entry("apps", "v1", "Deployment")}}},
		{inventory: &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{entry("", "v1", "ConfigMap")}}},
		{inventory: &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{entry("batch", "v1", "Job")}}, remote: true},
		{},
	}
	got := inventoryKinds(owners)
	NewWithT(t).Expect(got).To(Equal([]schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Group: "apps", Version: "v1", Kind: "Deployment"},
	}))
}
