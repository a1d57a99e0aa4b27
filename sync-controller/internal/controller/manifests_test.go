package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// Once a small Kustomization is Ready, sync-controller keeps its artifact's
// bytes but not the objects prepared and planned from them; a resync
// prepares them again from the bytes — no download, no write but the
// status — and a foreign change is still reverted.
func TestASettledSmallArtifactKeepsOnlyItsBytes(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	manifests := fleetApp(ks.Namespace)
	render(t, ks, "main@sha1:5151", manifests)
	waitReady(t, ks, "main@sha1:5151")
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func(g Gomega) {
		bytes, prepared := running.manifests.kept(key)
		g.Expect(bytes).To(BeTrue(), "the artifact's bytes are kept")
		g.Expect(prepared).To(BeFalse(), "the prepared objects outlive the sync")
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	requests.Reset()
	requestReconcile(t, ks)
	for req := range requests.WritesUnder("/namespaces/" + ks.Namespace + "/") {
		g.Expect(req).To(ContainSubstring("/kustomizations/app/status"), "unexpected write %s", req)
	}
	g.Expect(artifacts.downloads(artifactPath(ks, manifests))).To(Equal(1), "the resync downloaded the artifact again")

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "app"}, cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["key"] = "foreign"
	g.Expect(env.Client.Patch(ctx, cm, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "app"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("key", "value"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
}

// A large artifact keeps its prepared objects and plan after the sync:
// a drift correction of it does not decode and hash every object again.
func TestASettledLargeArtifactKeepsItsPreparedObjects(t *testing.T) {
	g := NewWithT(t)
	_, ks := newKustomization(t, nil)
	manifests := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: %s}\ndata:\n  key: %s\n",
		ks.Namespace, strings.Repeat("x", keepPreparedOver))
	render(t, ks, "main@sha1:5252", manifests)
	waitReady(t, ks, "main@sha1:5252")
	key := client.ObjectKeyFromObject(ks)
	// Settling follows the status write that made it Ready: give it time
	// to happen, and see that it kept the prepared objects.
	g.Consistently(func(g Gomega) {
		bytes, prepared := running.manifests.kept(key)
		g.Expect(bytes).To(BeTrue())
		g.Expect(prepared).To(BeTrue(), "a large artifact's prepared objects were dropped")
	}, time.Second, 50*time.Millisecond).Should(Succeed())
}

// The plan shares its objects with the prepared ones the cache keeps
// (pkg/plan copies none), and every later run of the same artifact applies
// them again: no run may change them. A large artifact's are kept after
// its sync; foreign edits of a ConfigMap, a Deployment (whose write is
// answered whole) and a headless Service are each reverted from them, and
// afterwards they are as the first sync prepared them. Run with -race,
// the concurrent applies of one kind group would show a write to a shared
// object too.
func TestACachedPlanIsNotChangedByTheRunsThatApplyIt(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	manifests := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: big, namespace: %[1]s}
data:
  key: %[2]s
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1.0}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: %[1]s}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
`, ks.Namespace, strings.Repeat("x", keepPreparedOver))
	render(t, ks, "main@sha1:5353", manifests)
	waitReady(t, ks, "main@sha1:5353")
	key := client.ObjectKeyFromObject(ks)

	var prepared []*unstructured.Unstructured
	var p *plan.Plan
	g.Eventually(func(g Gomega) {
		prepared, p = running.manifests.preparedOf(key)
		g.Expect(p).NotTo(BeNil())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(prepared).To(HaveLen(3))
	for _, o := range p.Inventory {
		g.Expect(prepared).To(ContainElement(BeIdenticalTo(o)), "the plan copied %s", object.IDOf(o))
	}
	before := make([]*unstructured.Unstructured, len(prepared))
	for i, o := range prepared {
		before[i] = o.DeepCopy()
	}

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "big"}, cm)).To(Succeed())
	cmPatch := client.MergeFrom(cm.DeepCopy())
	cm.Data["key"] = "foreign"
	g.Expect(env.Client.Patch(ctx, cm, cmPatch)).To(Succeed())
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, deploy)).To(Succeed())
	deployPatch := client.MergeFrom(deploy.DeepCopy())
	deploy.Spec.Replicas = ptr.To[int32](5)
	g.Expect(env.Client.Patch(ctx, deploy, deployPatch)).To(Succeed())
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, svc)).To(Succeed())
	svcPatch := client.MergeFrom(svc.DeepCopy())
	svc.Spec.Selector = map[string]string{"app": "foreign"}
	g.Expect(env.Client.Patch(ctx, svc, svcPatch)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "big"}, cm)).To(Succeed())
		g.Expect(cm.Data["key"]).NotTo(Equal("foreign"))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, deploy)).To(Succeed())
		g.Expect(*deploy.Spec.Replicas).To(Equal(int32(1)))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, svc)).To(Succeed())
		g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "web"}))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	after, kept := running.manifests.preparedOf(key)
	g.Expect(kept).To(BeIdenticalTo(p), "the corrections planned again")
	g.Expect(after).To(Equal(before), "a run changed the cached objects")
}
