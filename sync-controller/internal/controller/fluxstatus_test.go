package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
)

// fluxKustomizationStatus is the part of Flux's Kustomization status that
// the flux CLI reads, with Flux's JSON names and shapes: flux get (Ready,
// lastAppliedRevision), flux reconcile (lastHandledReconcileAt,
// observedGeneration), flux debug (history), flux tree and flux diff
// kustomization (inventory ids and versions).
type fluxKustomizationStatus struct {
	ObservedGeneration     int64              `json:"observedGeneration"`
	Conditions             []metav1.Condition `json:"conditions"`
	LastAppliedRevision    string             `json:"lastAppliedRevision"`
	LastAttemptedRevision  string             `json:"lastAttemptedRevision"`
	LastHandledReconcileAt string             `json:"lastHandledReconcileAt"`
	History                fluxmeta.History   `json:"history"`
	Inventory              *struct {
		Entries []struct {
			ID      string `json:"id"`
			Version string `json:"v"`
		} `json:"entries"`
	} `json:"inventory"`
}

// role is a Role whose name holds a colon, which Flux's inventory id
// writes as two underscores.
func role(ns, name string) string {
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: %q\n  namespace: %s\nrules:\n- apiGroups: ['']\n  resources: [configmaps]\n  verbs: [get]\n", name, ns)
}

// readAsFlux reads ks from the API server as JSON, as a Flux tool does,
// and returns its status decoded into Flux's shape and its raw inventory
// entries.
func readAsFlux(g Gomega, ks *kustomizev1.Kustomization) (fluxKustomizationStatus, []any) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind("Kustomization"))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), u)).To(Succeed())
	data, err := json.Marshal(u.Object["status"])
	g.Expect(err).NotTo(HaveOccurred())
	var st fluxKustomizationStatus
	g.Expect(json.Unmarshal(data, &st)).To(Succeed())
	entries, _, err := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	g.Expect(err).NotTo(HaveOccurred())
	return st, entries
}

// What the flux CLI reads of a Kustomization's status is there, in Flux's
// names and shapes: the inventory's entries are only an id in Flux's
// <namespace>_<name>_<group>_<kind> format (a colon of an RBAC name as
// "__") and v, the version; the revisions, the generation and the history
// are where flux get, flux reconcile and flux debug look.
func TestFluxToolsReadTheKustomizationStatus(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:f1f1", configMaps(ns, "a")+"---\n"+deployment(ns, "web", 1)+"---\n"+role(ns, "flux:reader"))
	got := waitReady(t, ks, "main@sha1:f1f1")

	st, entries := readAsFlux(g, ks)
	for _, e := range entries {
		g.Expect(e).To(HaveLen(2), "an entry has only Flux's two keys")
		g.Expect(e).To(HaveKey("id"))
		g.Expect(e).To(HaveKeyWithValue("v", "v1"))
	}
	g.Expect(st.Inventory).NotTo(BeNil())
	var ids []string
	for _, e := range st.Inventory.Entries {
		ids = append(ids, e.ID)
		parsed, err := kustomizev1.ParseInventoryID(e.ID, e.Version)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Inventory.Entries).To(ContainElement(parsed), "the id names an object Plumb applied")
	}
	g.Expect(ids).To(ConsistOf(
		ns+"_a__ConfigMap",
		ns+"_web_apps_Deployment",
		ns+"_flux__reader_rbac.authorization.k8s.io_Role",
	))

	g.Expect(st.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(st.LastAppliedRevision).To(Equal("main@sha1:f1f1"))
	g.Expect(st.LastAttemptedRevision).To(Equal("main@sha1:f1f1"))
	ready := apimeta.FindStatusCondition(st.Conditions, fluxmeta.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(ready.ObservedGeneration).To(Equal(got.Generation), "flux reconcile takes Ready only at the current generation")
	latest := st.History.Latest()
	g.Expect(latest).NotTo(BeNil())
	g.Expect(latest.Digest).To(HavePrefix("sha256:"))
	g.Expect(latest.Metadata).To(HaveKeyWithValue("revision", "main@sha1:f1f1"))
	g.Expect(latest.TotalReconciliations).To(BeNumerically(">=", 1))

	// flux reconcile sets Flux's annotation and waits for its value to
	// come back in lastHandledReconcileAt.
	token := time.Now().Format(time.RFC3339Nano)
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{meta.FluxReconcileRequestAnnotation: token}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		st, _ := readAsFlux(g, ks)
		return st.LastHandledReconcileAt
	}, time.Minute, 50*time.Millisecond).Should(Equal(token))
}

// An inventory a sync-controller of before wrote in Plumb's earlier shape
// still prunes what it lists, and the next sync writes it in Flux's, even
// when the set is the same.
func TestAnInventoryInTheEarlierShapeIsPrunedAndRewritten(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:e1", configMaps(ns, "kept", "gone"))
	waitReady(t, ks, "main@sha1:e1")

	storeEarlier := func(names ...string) {
		var list []any
		for _, n := range names {
			list = append(list, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": n})
		}
		current := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
		status := map[string]any{"inventory": map[string]any{"entries": list}}
		g.Expect(reconcile.ApplyStatus(ctx, env.Client, current, "plumb-sync-before", status)).To(Succeed())
		_, entries := readAsFlux(g, ks)
		g.Expect(entries).To(HaveEach(HaveKey("kind")), "the earlier shape is stored as written")
	}
	inFluxShape := func(names ...string) {
		g.Eventually(func(g Gomega) {
			st, entries := readAsFlux(g, ks)
			g.Expect(entries).To(HaveEach(HaveLen(2)))
			var ids []string
			for _, e := range st.Inventory.Entries {
				ids = append(ids, e.ID)
			}
			var want []string
			for _, n := range names {
				want = append(want, ns+"_"+n+"__ConfigMap")
			}
			g.Expect(ids).To(Equal(want))
		}, 30*time.Second).Should(Succeed())
	}

	storeEarlier("gone", "kept")
	render(t, ks, "main@sha1:e2", configMaps(ns, "kept"))
	waitReady(t, ks, "main@sha1:e2")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "gone")).To(BeFalse(), "pruned from the earlier inventory")
	inFluxShape("kept")

	// The same set in the earlier shape is rewritten too, a large one
	// included: it is written only when it changed (statusWriter), and
	// the earlier shape counts as a change.
	// kept stays (a render that prunes all of the inventory is held), and
	// last, as the inventory sorts it.
	large := make([]string, inventoryAlongMax)
	for i := range large {
		large[i] = fmt.Sprintf("cm-%03d", i)
	}
	large = append(large, "kept")
	render(t, ks, "main@sha1:e3", configMaps(ns, large...))
	waitReady(t, ks, "main@sha1:e3")
	storeEarlier(large...)
	render(t, ks, "main@sha1:e4", configMaps(ns, large...))
	waitReady(t, ks, "main@sha1:e4")
	inFluxShape(large...)
}
