package controller

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// TestAlertTemplates: a template that does not parse makes the Alert not
// Ready (InvalidTemplate, naming the field); fixed, the rendered summary
// and message reach a generic provider's endpoint; a template that fails
// on an event sends that event with its own message.
func TestAlertTemplates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	hook := newEndpoint(t)
	p := createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil)
	waitReady(t, p, metav1.ConditionTrue)

	a := createAlert(t, ns, "templated", "hook", func(s *notificationv1.AlertSpec) {
		s.EventMetadata = map[string]string{"cluster": "prod-eu"}
		s.Summary = "{{ .InvolvedObject.Name }} on {{ .Metadata.cluster }}"
		s.MessageTemplate = "{{ .Reason }}: {{ .Message | upper "
	})
	cond := waitReady(t, a, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.InvalidTemplateReason))
	g.Expect(cond.Message).To(ContainSubstring("spec.messageTemplate: "))
	g.Expect(a.Status.Conditions).To(ContainElement(And(
		HaveField("Type", meta.StalledCondition), HaveField("Status", metav1.ConditionTrue))))

	patch := client.MergeFrom(a.DeepCopy())
	a.Spec.MessageTemplate = `{{ .Reason }}: {{ .Message | upper }}{{ if .Metadata.fail }}{{ slice .Message 0 999 }}{{ end }}`
	g.Expect(k8s.Patch(ctx, a, patch)).To(Succeed())
	waitReady(t, a, metav1.ConditionTrue)

	opts := testOptions(ns)
	startDispatcher(t, ns, opts)
	repo := gitRepository(t, ns, "podinfo", nil, false)
	controllers.Eventf(repo, events.SeverityInfo, sourcev1.NewArtifactReason, "stored artifact")
	controllers.Record(repo, events.SeverityInfo, sourcev1.NewArtifactReason, "stored again", events.WithMetadata(map[string]string{"fail": "yes"}))
	waitConsumed(t, opts.ConsumerName)

	sent := hook.events(t)
	g.Expect(sent).To(HaveLen(2))
	g.Expect(sent[0].Message).To(Equal("NewArtifact: STORED ARTIFACT"))
	g.Expect(sent[0].Metadata).To(HaveKeyWithValue("summary", "podinfo on prod-eu"))
	g.Expect(sent[1].Message).To(Equal("stored again"), "the untemplated message")
	g.Expect(sent[1].Metadata).To(HaveKeyWithValue("summary", "podinfo on prod-eu"))
}

// TestAlertRangeOverANumberIsRefused: an Alert whose template ranges over
// .Timestamp.UnixNano (about 1.7e18 iterations printing nothing: no output
// bound stops it and no timeout can cancel it) is Ready=False, naming the
// field and the construct, and never runs; its events still go out with
// their own message. Another Alert's template, ranging over the metadata,
// renders every event meanwhile — more events than templates may run at
// once, which the hostile template's executions, left running past their
// timeout, used to hold for good.
func TestAlertRangeOverANumberIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	fineHook, hostileHook := newEndpoint(t), newEndpoint(t)
	for name, hook := range map[string]*endpoint{"fine": fineHook, "hostile": hostileHook} {
		waitReady(t, createProvider(t, ns, name, notificationv1.GenericProvider, hook.URL, nil), metav1.ConditionTrue)
	}
	fine := createAlert(t, ns, "fine", "fine", func(s *notificationv1.AlertSpec) {
		s.EventMetadata = map[string]string{"cluster": "prod-eu"}
		s.MessageTemplate = `{{ .Message }}:{{ range $k, $v := .Metadata }} {{ $k }}={{ $v }}{{ end }}`
	})
	hostile := createAlert(t, ns, "hostile", "hostile", func(s *notificationv1.AlertSpec) {
		s.MessageTemplate = `{{ .Reason }}{{ range .Timestamp.UnixNano }}{{ end }}`
	})
	waitReady(t, fine, metav1.ConditionTrue)
	// Reconciled, whatever it says: what it says is checked last, after
	// the deliveries, which show what the template did to the dispatcher.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(hostile), hostile)).To(Succeed())
		g.Expect(readyOf(hostile)).To(HaveField("ObservedGeneration", hostile.Generation))
	}, timeout, poll).Should(Succeed())

	opts := testOptions(ns)
	startDispatcher(t, ns, opts)
	repo := gitRepository(t, ns, "podinfo", nil, false)
	var want, own []string
	send := func(from, to int) {
		for i := from; i < to; i++ {
			msg := fmt.Sprintf("stored artifact %d", i)
			controllers.Eventf(repo, events.SeverityInfo, sourcev1.NewArtifactReason, "%s", msg)
			want, own = append(want, msg+": cluster=prod-eu"), append(own, msg)
		}
		waitConsumed(t, opts.ConsumerName)
	}
	// As many hostile executions as may run at once, then more events
	// for both Alerts.
	send(0, 4)
	send(4, 8)

	g.Expect(messagesOf(fineHook.events(t))).To(ConsistOf(want), "every event rendered by the fine Alert's template")
	g.Expect(messagesOf(hostileHook.events(t))).To(ConsistOf(own), "the refused Alert sends the events untemplated")
	cond := readyOf(hostile)
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), cond.Message)
	g.Expect(cond.Reason).To(Equal(notificationv1.InvalidTemplateReason))
	g.Expect(cond.Message).To(Equal("spec.messageTemplate: {{range .Timestamp.UnixNano}}: .Timestamp.UnixNano is not a field of the event, and {{range}} goes over a map or list of the event only (such as .Metadata)"))
}
