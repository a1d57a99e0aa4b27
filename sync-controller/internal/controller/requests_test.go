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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
)

// fleetApp is the Kustomization of the fleet benchmark (docs/bench/fleet.md):
// a ConfigMap, a Secret, a headless Service and a ServiceAccount.
func fleetApp(ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: %[1]s}
data: {key: value}
---
apiVersion: v1
kind: Secret
metadata: {name: app, namespace: %[1]s}
stringData: {key: value}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec:
  clusterIP: None
  selector: {app: app}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app, namespace: %[1]s}
`, ns)
}

// A fresh Kustomization of 4 objects costs sync-controller a bounded number
// of API requests from its creation to Ready, counted by kind: the bound is
// what the controller achieves, so a write added back fails here. The
// order is the fleet's usual one: sync-controller sees the Kustomization
// before render-controller has rendered it, then syncs the render.
func TestAFreshKustomizationOfFourObjectsCostsFewRequests(t *testing.T) {
	g := NewWithT(t)
	requests.Reset()
	_, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	// sync-controller's first reconcile finds nothing rendered and writes
	// nothing: neither its finalizer nor a "waiting for render-controller"
	// (renderWaits).
	g.Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	g.Expect(requestsByKind(ks.Namespace)).To(BeEmpty())
	render(t, ks, "main@sha1:f1ee7", fleetApp(ks.Namespace))
	got := waitReady(t, ks, "main@sha1:f1ee7")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(4))

	// Before issue 20's diet: 5 status applies (a new generation's
	// Reconciling mark and the outcome of the first run; the first step's
	// progress, the inventory and the rest of the second's) and 2 GETs;
	// then 2 status applies, until the first run stopped writing. The
	// Applied event's POST is sent in the background: wait for it.
	want := map[string]int{
		"apply kustomizations/status": 1, // the sync's outcome
		"apply kustomizations":        1, // the finalizer
		"apply objects":               4,
		"post events":                 1, // Applied
	}
	g.Eventually(func() map[string]int { return requestsByKind(ks.Namespace) }, 10*time.Second, 10*time.Millisecond).Should(Equal(want))
	t.Logf("requests of sync-controller for a fresh Kustomization of 4 objects: %v", requestsByKind(ks.Namespace))
	g.Expect(running.renderWaits.waiting(key)).To(BeFalse(), "a rendered Kustomization's wait is dropped")
}

// A first sync is one Kubernetes Event on the Kustomization, Normal
// Applied, that names the revision and what the sync changed, as Flux's
// one event of a reconcile that changed something does; the stream
// carries the same news (docs/design/events.md). render-controller's
// Rendered of the same Kustomization is on the stream only
// (render-controller's TestARenderIsOnNATSAndOnlyAFailedOneIsAKubernetesEvent).
func TestAFirstSyncIsOneKubernetesEventNamingTheRevisionAndTheChanges(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	stream := subscribeEvents(t, ks)
	ns := ks.Namespace
	render(t, ks, "main@sha1:e1e7", fleetApp(ns))
	waitReady(t, ks, "main@sha1:e1e7")

	wantNote := "revision main@sha1:e1e7: 4 created, 0 configured, 0 unchanged: " +
		"ServiceAccount/" + ns + "/app created, Secret/" + ns + "/app created, ConfigMap/" + ns + "/app created, Service/" + ns + "/app created"
	kubeEvents := func(g Gomega) []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == kustomizev1.KustomizationKind && e.Regarding.Name == ks.Name {
				out = append(out, e)
			}
		}
		return out
	}
	g.Eventually(kubeEvents, 10*time.Second, 20*time.Millisecond).ShouldNot(BeEmpty())
	// Anything else recorded by the sync was queued before Applied.
	g.Consistently(kubeEvents, time.Second, 50*time.Millisecond).Should(HaveLen(1))
	e := kubeEvents(g)[0]
	g.Expect(e.Type).To(Equal(corev1.EventTypeNormal))
	g.Expect(e.Reason).To(Equal(kustomizev1.AppliedReason))
	g.Expect(e.ReportingController).To(Equal(ControllerName))
	g.Expect(e.Note).To(Equal(wantNote))
	g.Expect(e.Annotations).To(HaveKeyWithValue("plumb.dev/revision", "main@sha1:e1e7"))

	g.Eventually(func() []*events.Event { return stream.withReason(kustomizev1.AppliedReason) }, 10*time.Second, 20*time.Millisecond).Should(HaveLen(1))
	applied := stream.withReason(kustomizev1.AppliedReason)[0]
	g.Expect(applied.Severity).To(Equal(events.SeverityInfo))
	g.Expect(applied.Message).To(Equal(wantNote))
	g.Expect(applied.Revision).To(Equal("main@sha1:e1e7"))
	g.Expect(applied.Metadata).To(Equal(map[string]string{"created": "4", "configured": "0", "unchanged": "0"}))
}

// A render that does not come within the grace is waited for out loud:
// the finalizer, and Ready=Unknown saying what sync-controller waits for.
func TestARenderLongInComingIsShownInReady(t *testing.T) {
	g := NewWithT(t)
	running.renderWaits.setGrace(300 * time.Millisecond)
	t.Cleanup(func() { running.renderWaits.setGrace(0) })
	_, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), key, got)).To(Succeed())
		g.Expect(controllerutil.ContainsFinalizer(got, Finalizer)).To(BeTrue())
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(ready.Message).To(Equal(fmt.Sprintf("waiting for render-controller to render generation %d", got.Generation)))
	}, time.Minute, 20*time.Millisecond).Should(Succeed())
	render(t, ks, "main@sha1:10ad", fleetApp(ks.Namespace))
	got := waitReady(t, ks, "main@sha1:10ad")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(4))
}

// requestsByKind sums the requests counted since the last reset that name
// the namespace, by verb and resource: the Kustomization's status, the
// Kustomization itself, and the managed objects together.
func requestsByKind(ns string) map[string]int {
	out := map[string]int{}
	for k, n := range requests.Under("/namespaces/" + ns + "/") {
		method, path, _ := strings.Cut(k, " ")
		_, rest, ok := strings.Cut(path, "/namespaces/"+ns+"/")
		if !ok {
			continue
		}
		verb := strings.ToLower(method)
		if method == "PATCH" {
			verb = "apply"
		}
		switch {
		case strings.HasPrefix(rest, "kustomizations/") && strings.HasSuffix(rest, "/status"):
			out[verb+" kustomizations/status"] += n
		case strings.HasPrefix(rest, "kustomizations"):
			out[verb+" kustomizations"] += n
		default:
			resource, _, _ := strings.Cut(rest, "/")
			if verb == "apply" && !strings.Contains(path, "(dry-run)") {
				out["apply objects"] += n
			} else {
				out[verb+" "+resource] += n
			}
		}
	}
	return out
}

// A small inventory is written with the rest of the status, under
// plumb-sync; one past inventoryAlongMax under plumb-sync-inventory, and
// left out of plumb-sync's writes. Crossing the bound either way, and
// writes of the rest alone after it, never lose the inventory.
func TestTheInventorySurvivesChangingFieldManager(t *testing.T) {
	g := NewWithT(t)
	// Without prune: the prune guard would hold back a render that drops
	// most of the inventory.
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Prune = false })
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("cm-%03d", i)
		}
		return out
	}
	owner := func(ks *kustomizev1.Kustomization) []string {
		var managers []string
		for _, mf := range ks.ManagedFields {
			if mf.Subresource == "status" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:inventory"`) {
				managers = append(managers, mf.Manager)
			}
		}
		return managers
	}
	steps := []struct {
		revision string
		objects  int
		manager  string
	}{
		{"main@sha1:a001", 2, statusManager},
		{"main@sha1:a002", inventoryAlongMax + 1, inventoryManager},
		{"main@sha1:a003", 3, statusManager},
		{"main@sha1:a004", inventoryAlongMax + 2, inventoryManager},
	}
	for _, st := range steps {
		render(t, ks, st.revision, configMaps(ks.Namespace, names(st.objects)...))
		got := waitReady(t, ks, st.revision)
		g.Expect(got.Status.Inventory.Entries).To(HaveLen(st.objects), st.revision)
		g.Expect(owner(got)).To(Equal([]string{st.manager}), st.revision)
		// A write of the rest alone keeps it.
		requestReconcile(t, ks)
		again := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), again)).To(Succeed())
		g.Expect(again.Status.Inventory.Entries).To(HaveLen(st.objects), st.revision+" after a resync")
	}
}
