package controller

import (
	"context"
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
