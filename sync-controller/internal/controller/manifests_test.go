package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
