package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/request"
)

// A Provider, an Alert and a Receiver are reconciled at once when asked
// (reconcile.plumb.dev/requestedAt, which changes no generation), and
// record the request they handled, which `plumb reconcile` waits for.
func TestRequestedReconcilesAreRecorded(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	provider := createProvider(t, ns, "chat", "generic", "http://127.0.0.1:1/hook", nil)
	alert := createAlert(t, ns, "deploys", "chat", nil)
	createSecret(t, ns, "token", map[string]string{"token": hookToken})
	rcv := genericReceiver(ns, "push", "token")
	NewWithT(t).Expect(k8s.Create(ctx, rcv)).To(Succeed())

	for _, obj := range []client.Object{provider, alert, rcv} {
		t.Run(obj.GetName(), func(t *testing.T) {
			g := NewWithT(t)
			waitReady(t, obj, metav1.ConditionTrue)
			generation := obj.GetGeneration()
			token, err := request.Reconcile(ctx, k8s, obj, nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
				g.Expect(obj.(meta.Requestable).GetLastHandledReconcileRequest()).To(Equal(token))
			}, timeout, poll).Should(Succeed())
			g.Expect(obj.GetGeneration()).To(Equal(generation))
			g.Expect(readyOf(obj).Status).To(Equal(metav1.ConditionTrue))
		})
	}
}
