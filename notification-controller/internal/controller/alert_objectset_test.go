package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/events"
)

// An Alert whose eventSources name an ObjectSet receives that set's
// events (ObjectsCreated, ObjectsRestored, ObjectsPruned, as
// sync-controller publishes them), and none of another set's.
func TestAnAlertNamingAnObjectSetReceivesItsEvents(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	hook := webhookAlert(t, ns, notificationv1.CrossNamespaceObjectReference{Kind: setv1.ObjectSetKind, Name: "fleet"})
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

	pub, err := events.NewJetStreamPublisher(natsOpt, "sync-controller", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	syncController := events.NewRecorder(nil, pub, env.Scheme, "sync-controller")
	fleet, previews := objectSet(t, ns, "fleet"), objectSet(t, ns, "previews")

	syncController.Eventf(fleet, events.SeverityInfo, setv1.ObjectsCreatedReason, "created Kustomization/%s/app-dev", ns)
	syncController.Eventf(previews, events.SeverityInfo, setv1.ObjectsCreatedReason, "created Kustomization/%s/pr-7", ns)
	syncController.Eventf(fleet, events.SeverityInfo, setv1.ObjectsRestoredReason, "restored Kustomization/%s/app-dev (deleted)", ns)
	syncController.Eventf(previews, events.SeverityInfo, setv1.ObjectsPrunedReason, "pruned Kustomization/%s/pr-7", ns)
	syncController.Eventf(fleet, events.SeverityInfo, setv1.ObjectsPrunedReason, "pruned Kustomization/%s/app-dev", ns)
	g.Eventually(pub.Len, timeout, poll).Should(BeZero(), "events stored")
	waitConsumed(t, opts.ConsumerName)

	got := hook.events(t)
	g.Expect(messagesOf(got)).To(Equal([]string{
		"created Kustomization/" + ns + "/app-dev",
		"restored Kustomization/" + ns + "/app-dev (deleted)",
		"pruned Kustomization/" + ns + "/app-dev",
	}), "the fleet set's events, in order, and none of the previews set's")
	for _, e := range got {
		g.Expect(e.InvolvedObject.Kind).To(Equal(setv1.ObjectSetKind))
		g.Expect(e.InvolvedObject.Name).To(Equal("fleet"))
		g.Expect(e.ReportingController).To(Equal("sync-controller"))
	}
	g.Expect(got[0].Reason).To(Equal(setv1.ObjectsCreatedReason))
	g.Expect(got[2].Reason).To(Equal(setv1.ObjectsPrunedReason))
}

// webhookAlert makes a generic webhook endpoint, and a Ready Provider and
// Alert that send it the events of source.
func webhookAlert(t *testing.T, ns string, source notificationv1.CrossNamespaceObjectReference) *endpoint {
	t.Helper()
	hook := newEndpoint(t)
	waitReady(t, createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil), metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-hook", "hook", func(s *notificationv1.AlertSpec) {
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{source}
	}), metav1.ConditionTrue)
	return hook
}

// objectSet creates an ObjectSet of one list element: nothing reconciles
// it here, the test publishes its events.
func objectSet(t *testing.T, ns, name string) *setv1.ObjectSet {
	t.Helper()
	s := &setv1.ObjectSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: setv1.ObjectSetSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Generators: []setv1.Generator{{List: &setv1.ListGenerator{
				Elements: []apiextensionsv1.JSON{{Raw: json.RawMessage(`{"name":"dev"}`)}}}}},
			Template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .name }}\n",
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), s)).To(Succeed())
	return s
}
