package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
)

func TestReconcileSourceGitSpelledAsFlux(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "app")
	create(ctx, t, repo)
	const rev = "main@sha1:4444444444444444444444444444444444444444"
	standIn(t, repo, outcome{ready: true, message: "stored artifact", revision: rev}, writeGitRepository)

	r := plumb("reconcile", "source", "git", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)[0]).To(Equal("► reconcile of GitRepository/" + ns + "/app requested"))
	g.Expect(r.out).To(HaveSuffix("✔ GitRepository/" + ns + "/app reconciled, revision " + rev + "\n"))

	// Two words after reconcile: the second is the NAME, as before.
	r = plumb("reconcile", "source", "git", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("GitRepository git not found in namespace " + ns))

	r = plumb("reconcile", "source", "s3", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`unknown source type "s3"`))

	// An ExternalArtifact is its producer's to refresh.
	r = plumb("reconcile", "externalartifact", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`unknown kind "externalartifact"`))
}

func TestSuspendResumeEveryKind(t *testing.T) {
	ctx, ns := newNamespace(t)
	repo := gitRepo(ns, "app")
	ks := kustomization(ns, "app", "app")
	rcv := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		Spec: notificationv1.ReceiverSpec{
			Type:      notificationv1.GitHubReceiver,
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: "GitRepository", Name: "app"}},
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
	create(ctx, t, repo, ks, rcv, alert, provider)

	for _, tc := range []struct {
		words []string
		obj   client.Object
		ref   string
	}{
		{[]string{"source", "git", "app"}, repo, "GitRepository/" + ns + "/app"},
		{[]string{"kustomization", "app"}, ks, "Kustomization/" + ns + "/app"},
		{[]string{"receiver", "github"}, rcv, "Receiver/" + ns + "/github"},
		{[]string{"alert", "slack"}, alert, "Alert/" + ns + "/slack"},
		{[]string{"alert-provider", "slack"}, provider, "Provider/" + ns + "/slack"},
		{[]string{"provider", "slack"}, provider, "Provider/" + ns + "/slack"},
	} {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			g := NewWithT(t)
			suspended := func() bool {
				u := tc.obj.DeepCopyObject().(client.Object)
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tc.obj), u)).To(Succeed())
				return kindOf(u).status(u).suspended
			}
			r := plumb(append(append([]string{"suspend"}, tc.words...), "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(r.out).To(Equal("✔ " + tc.ref + " suspended\n"))
			g.Expect(suspended()).To(BeTrue())

			r = plumb(append(append([]string{"resume"}, tc.words...), "-n", ns, "--wait=false")...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(r.out).To(Equal("► " + tc.ref + " resumed\n"))
			g.Expect(suspended()).To(BeFalse())
		})
	}

	t.Run("resume waits for the controller to handle an Alert's request", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(plumb("suspend", "alert", "slack", "-n", ns).code).To(Equal(ExitOK))
		// A stand-in notification-controller: it reports Ready for each
		// new generation of a resumed Alert.
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() {
			defer close(done)
			for sctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
				a := &notificationv1.Alert{}
				if env.Client.Get(sctx, client.ObjectKeyFromObject(alert), a) != nil || a.Spec.Suspend {
					continue
				}
				token := a.Annotations[meta.ReconcileRequestAnnotation]
				if a.Status.ObservedGeneration == a.Generation && a.Status.LastHandledReconcileAt == token {
					continue
				}
				a.Status.ObservedGeneration = a.Generation
				a.Status.LastHandledReconcileAt = token
				a.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "sending to provider slack", a.Generation)}
				_ = env.Client.Status().Update(sctx, a)
			}
		}()
		r := plumb("resume", "alert", "slack", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(HavePrefix("► Alert/" + ns + "/slack resumed\n"))
		g.Expect(r.out).To(HaveSuffix("✔ Alert/" + ns + "/slack reconciled\n"))
	})

	t.Run("unknown kind", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("suspend", "deployment", "web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(`unknown kind "deployment"`))
	})
}

// kindOf finds the kind table's entry for a typed object.
func kindOf(o client.Object) *kind {
	name := fmt.Sprintf("%T", o) // *v1.GitRepository
	for _, k := range allKinds {
		if strings.HasSuffix(name, "."+k.Kind) {
			return k
		}
	}
	panic("no kind for " + name)
}
