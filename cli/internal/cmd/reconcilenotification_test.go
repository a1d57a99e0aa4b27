package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// writeNotificationStatus sets a Provider's, Alert's or Receiver's status
// as notification-controller does.
func writeNotificationStatus(st *notificationv1.Status, gen int64, token string, reconciling bool, r outcome) {
	st.ObservedGeneration = gen
	if reconciling {
		st.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "reading the Secret", gen),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", gen),
		}
		return
	}
	st.LastHandledReconcileAt = token
	status := "False"
	if r.ready {
		status = "True"
	}
	st.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, meta.SucceededReason, r.message, gen)}
}

// Receivers, Alerts and Providers are reconciled as every other kind: the
// request, then the wait for notification-controller to handle it.
func TestReconcileNotificationKinds(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	rcv := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		Spec: notificationv1.ReceiverSpec{
			Type:      notificationv1.GitHubReceiver,
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
			SecretRef: &meta.LocalObjectReference{Name: "token"},
		},
	}
	alert := &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec: notificationv1.AlertSpec{
			ProviderRef:  meta.LocalObjectReference{Name: "slack"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: kustomizev1.KustomizationKind, Name: "*"}},
		},
	}
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.SlackProvider, Channel: "general", SecretRef: &meta.LocalObjectReference{Name: "slack-url"}},
	}
	create(ctx, t, rcv, alert, provider)
	standIn(t, rcv, outcome{ready: true, message: "receiver initialized for path /hook/abc"},
		func(o *notificationv1.Receiver, token string, reconciling bool, r outcome) {
			writeNotificationStatus(&o.Status.Status, o.Generation, token, reconciling, r)
		})
	standIn(t, alert, outcome{message: "provider slack is not ready: secret slack-url not found"},
		func(o *notificationv1.Alert, token string, reconciling bool, r outcome) {
			writeNotificationStatus(&o.Status, o.Generation, token, reconciling, r)
		})
	standIn(t, provider, outcome{ready: true, message: "sending to #general"},
		func(o *notificationv1.Provider, token string, reconciling bool, r outcome) {
			writeNotificationStatus(&o.Status, o.Generation, token, reconciling, r)
		})

	for _, tc := range []struct {
		words []string
		obj   client.Object
		code  int
		last  string
	}{
		{[]string{"receiver", "github"}, rcv, ExitOK, "✔ Receiver/" + ns + "/github reconciled"},
		{[]string{"alert-provider", "slack"}, provider, ExitOK, "✔ Provider/" + ns + "/slack reconciled"},
		{[]string{"alert", "slack"}, alert, ExitNegative, ""},
	} {
		r := plumb(append(append([]string{"reconcile"}, tc.words...), "-n", ns, "--timeout", "1m")...)
		g.Expect(r.code).To(Equal(tc.code), r.String())
		kind := kindOf(tc.obj)
		g.Expect(r.out).To(HavePrefix("► reconcile of " + kind.Kind + "/" + ns + "/" + tc.obj.GetName() + " requested\n"))
		if tc.last != "" {
			g.Expect(lines(r.out)).To(ContainElements("◎ reading the Secret", tc.last))
			g.Expect(r.out).To(HaveSuffix(tc.last + "\n"))
		}
		// The request the command made is the one handled.
		obj := tc.obj.DeepCopyObject().(client.Object)
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(obj.(meta.Requestable).GetLastHandledReconcileRequest()).To(Equal(obj.GetAnnotations()[meta.ReconcileRequestAnnotation]))
	}
	r := plumb("reconcile", "alert", "slack", "-n", ns)
	g.Expect(r.errOut).To(ContainSubstring("✗ Alert/" + ns + "/slack is not ready: provider slack is not ready: secret slack-url not found"))
}
