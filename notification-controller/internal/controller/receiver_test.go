package controller

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/receiver"
	"plumb.dev/pkg/events"
)

// hookToken is a webhook token of the shortest length a Receiver takes.
const hookToken = "webhook-token-of-32-bytes-at-min"

// createReceiver creates a Receiver with its token Secret and waits until
// it is Ready with a webhook path.
func createReceiver(t *testing.T, ns, name, typ string, mutate func(*notificationv1.ReceiverSpec)) *notificationv1.Receiver {
	t.Helper()
	createSecret(t, ns, name+"-token", map[string]string{"token": hookToken})
	r := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.ReceiverSpec{
			Type:      typ,
			SecretRef: &meta.LocalObjectReference{Name: name + "-token"},
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
		},
	}
	if mutate != nil {
		mutate(&r.Spec)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), r)).To(Succeed())
	if !r.Spec.Suspend {
		waitReady(t, r, metav1.ConditionTrue)
		waitServed(t, tokens, r)
	}
	return r
}

// waitServed waits until r has a webhook path (the patch helper writes the
// conditions first, so Ready can be seen before the path) and the receiver
// server serves it: its token is loaded under that path and the manager's
// cache, which sees the status a moment after the API server has it, holds
// r Ready. r is updated from the API server.
func waitServed(t *testing.T, tokens *receiver.Tokens, r *notificationv1.Receiver) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(r), r)).To(Succeed())
		g.Expect(r.Status.WebhookPath).NotTo(BeEmpty())
		g.Expect(tokens.Path(client.ObjectKeyFromObject(r))).To(Equal(r.Status.WebhookPath))
		var cached notificationv1.Receiver
		g.Expect(mgr.GetClient().Get(context.Background(), client.ObjectKeyFromObject(r), &cached)).To(Succeed())
		g.Expect(readyOf(&cached)).NotTo(BeNil())
		g.Expect(readyOf(&cached).Status).To(Equal(metav1.ConditionTrue))
	}, 3*timeout, poll).Should(Succeed(), "the receiver server serves the Receiver")
}

// genericReceiver returns (without creating it) a generic Receiver of the
// GitRepository "app" whose token is in the Secret secret.
func genericReceiver(ns, name, secret string) *notificationv1.Receiver {
	return &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.ReceiverSpec{
			Type:      notificationv1.GenericReceiver,
			SecretRef: &meta.LocalObjectReference{Name: secret},
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
		},
	}
}

func post(t *testing.T, path string, header map[string]string, body []byte) (int, string) {
	t.Helper()
	return postTo(t, receiverURL+path, header, bytes.NewReader(body))
}

func sign(h func() hash.Hash, algo string, body []byte) string {
	mac := hmac.New(h, []byte(hookToken))
	mac.Write(body)
	return algo + "=" + hex.EncodeToString(mac.Sum(nil))
}

func requestedAt(t *testing.T, obj client.Object) string {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
}

// TestGitHubReceiver: a signed push annotates the GitRepository and records
// an event; a wrong signature is 401 and annotates nothing; a ping is 200.
func TestGitHubReceiver(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	app := gitRepository(t, ns, "app", nil, true)
	rcv := createReceiver(t, ns, "github", notificationv1.GitHubReceiver, func(s *notificationv1.ReceiverSpec) {
		s.Events = []string{"push"}
	})
	g.Expect(rcv.Status.WebhookPath).To(Equal(receiver.WebhookPath(hookToken, "github", ns)))
	g.Expect(rcv.Status.WebhookPath).To(MatchRegexp(`^/hook/[0-9a-f]{64}$`))
	push, err := os.ReadFile("testdata/github-push.json")
	g.Expect(err).NotTo(HaveOccurred())

	code, msg := post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event":      "push",
		"X-Hub-Signature-256": sign(sha256.New, "sha256", push),
	}, append(push[:len(push):len(push)], ' '))
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
	g.Expect(requestedAt(t, app)).To(BeEmpty())

	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{"X-GitHub-Event": "push"}, push)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "no signature: %s", msg)

	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event":      "ping",
		"X-Hub-Signature-256": sign(sha256.New, "sha256", []byte(`{"zen":"hi"}`)),
	}, []byte(`{"zen":"hi"}`))
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(requestedAt(t, app)).To(BeEmpty())

	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event":      "issues",
		"X-Hub-Signature-256": sign(sha256.New, "sha256", push),
	}, push)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("not in spec.events"))
	g.Expect(requestedAt(t, app)).To(BeEmpty())

	before := time.Now().UTC().Add(-time.Second)
	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event":      "push",
		"X-Hub-Signature-256": sign(sha256.New, "sha256", push),
	}, push)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	at, err := time.Parse(time.RFC3339Nano, requestedAt(t, app))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally(">=", before))

	// The old X-Hub-Signature (sha1) works when the sha256 header is absent.
	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event":  "push",
		"X-Hub-Signature": sign(sha1.New, "sha1", push),
	}, push)
	g.Expect(code).To(Equal(http.StatusOK), msg)

	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == notificationv1.ReceiverKind {
				reasons = append(reasons, e.Reason+": "+e.Message)
			}
		}
		g.Expect(reasons).To(ContainElement("ReconcileRequested: push event: requested a reconcile of GitRepository/app"))
	}, timeout, poll).Should(Succeed())
	g.Expect(counter(t, "plumb_notification_receiver_requests_total", map[string]string{"code": "401"})).To(BeNumerically(">=", 2))

	// The event is on the stream too, for alerts about receivers.
	nc, err := nats.Connect(env.NATSURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())
	subject := events.Subject(notificationv1.ReceiverKind, ns, "github")
	g.Eventually(func(g Gomega) {
		s, err := js.Stream(context.Background(), natsOpt.Stream)
		g.Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.State.Subjects[subject]).To(Equal(uint64(2)), "two accepted pushes")
	}, timeout, poll).Should(Succeed())
}

// TestReceiverTypes covers GitLab, Bitbucket, generic and generic-hmac, and
// a wildcard resource with matchLabels.
func TestReceiverTypes(t *testing.T) {
	ns := newNamespace(t)
	body := []byte(`{"ref":"refs/heads/main"}`)
	for _, tc := range []struct {
		name, typ string
		good, bad map[string]string
	}{
		{
			name: "gitlab", typ: notificationv1.GitLabReceiver,
			good: map[string]string{"X-Gitlab-Token": hookToken, "X-Gitlab-Event": "Push Hook"},
			bad:  map[string]string{"X-Gitlab-Token": "guess", "X-Gitlab-Event": "Push Hook"},
		},
		{
			name: "bitbucket", typ: notificationv1.BitbucketReceiver,
			good: map[string]string{"X-Hub-Signature": sign(sha256.New, "sha256", body), "X-Event-Key": "repo:refs_changed"},
			bad:  map[string]string{"X-Hub-Signature": sign(sha256.New, "sha256", []byte("other")), "X-Event-Key": "repo:refs_changed"},
		},
		{
			name: "hmac", typ: notificationv1.GenericHMACReceiver,
			good: map[string]string{"X-Signature": sign(sha512.New, "sha512", body)},
			bad:  map[string]string{"X-Signature": "sha512=" + hex.EncodeToString(make([]byte, 64))},
		},
		{
			name: "generic", typ: notificationv1.GenericReceiver,
			good: map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			app := gitRepository(t, ns, tc.name+"-app", nil, true)
			rcv := createReceiver(t, ns, tc.name, tc.typ, func(s *notificationv1.ReceiverSpec) {
				s.Resources[0].Name = tc.name + "-app"
			})
			if tc.bad != nil {
				code, msg := post(t, rcv.Status.WebhookPath, tc.bad, body)
				g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
				g.Expect(requestedAt(t, app)).To(BeEmpty())
			}
			code, msg := post(t, rcv.Status.WebhookPath, tc.good, body)
			g.Expect(code).To(Equal(http.StatusOK), msg)
			g.Expect(requestedAt(t, app)).NotTo(BeEmpty())
		})
	}

	t.Run("wildcard", func(t *testing.T) {
		g := NewWithT(t)
		web := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"tier": "frontend"}},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
				Interval:  metav1.Duration{Duration: time.Hour},
			},
		}
		api := web.DeepCopy()
		api.Name, api.Labels = "api", map[string]string{"tier": "backend"}
		g.Expect(k8s.Create(context.Background(), web)).To(Succeed())
		g.Expect(k8s.Create(context.Background(), api)).To(Succeed())
		rcv := createReceiver(t, ns, "wildcard", notificationv1.GenericReceiver, func(s *notificationv1.ReceiverSpec) {
			s.Resources = []notificationv1.CrossNamespaceObjectReference{{
				Kind: kustomizev1.KustomizationKind, Name: "*", MatchLabels: map[string]string{"tier": "frontend"},
			}}
		})
		code, msg := post(t, rcv.Status.WebhookPath, nil, body)
		g.Expect(code).To(Equal(http.StatusOK), msg)
		g.Expect(msg).To(ContainSubstring("Kustomization/web"))
		g.Expect(requestedAt(t, web)).NotTo(BeEmpty())
		g.Expect(requestedAt(t, api)).To(BeEmpty())
	})

	// A webhook may request a reconcile of the Helm kinds too: a chart
	// repository that published a version, as Flux's Receiver does.
	t.Run("helm kinds", func(t *testing.T) {
		g := NewWithT(t)
		repo := &sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
			Spec:       sourcev1.HelmRepositorySpec{URL: "https://charts.example", Interval: metav1.Duration{Duration: time.Hour}},
		}
		chart := &sourcev1.HelmChart{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
			Spec: sourcev1.HelmChartSpec{Chart: "podinfo", Interval: metav1.Duration{Duration: time.Hour},
				SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}},
		}
		release := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
			Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "podinfo"}},
		}
		for _, o := range []client.Object{repo, chart, release} {
			g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
		}
		rcv := createReceiver(t, ns, "helm", notificationv1.GenericReceiver, func(s *notificationv1.ReceiverSpec) {
			s.Resources = []notificationv1.CrossNamespaceObjectReference{
				{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
				{Kind: sourcev1.HelmChartKind, Name: "*"},
				{Kind: helmv2.HelmReleaseKind, Name: "podinfo"},
			}
		})
		code, msg := post(t, rcv.Status.WebhookPath, nil, body)
		g.Expect(code).To(Equal(http.StatusOK), msg)
		for _, o := range []client.Object{repo, chart, release} {
			g.Expect(requestedAt(t, o)).NotTo(BeEmpty(), "%T %s", o, o.GetName())
		}
	})

	// And of an OCIRepository: a registry that got a new push.
	t.Run("oci repository", func(t *testing.T) {
		g := NewWithT(t)
		oci := ociRepository(t, ns, "manifests")
		rcv := createReceiver(t, ns, "registry", notificationv1.GenericReceiver, func(s *notificationv1.ReceiverSpec) {
			s.Resources = []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.OCIRepositoryKind, Name: "manifests"}}
		})
		code, msg := post(t, rcv.Status.WebhookPath, nil, body)
		g.Expect(code).To(Equal(http.StatusOK), msg)
		g.Expect(msg).To(ContainSubstring("OCIRepository/manifests"))
		g.Expect(requestedAt(t, oci)).NotTo(BeEmpty())
	})
}

// TestReceiverRejections: unknown path 404, oversize body 413, suspended
// 503, not Ready 503, other methods 404/405.
func TestReceiverRejections(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	app := gitRepository(t, ns, "app", nil, true)
	rcv := createReceiver(t, ns, "generic", notificationv1.GenericReceiver, nil)

	code, _ := post(t, "/hook/"+hex.EncodeToString(make([]byte, 32)), nil, nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
	code, _ = post(t, "/elsewhere", nil, nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
	resp, err := http.Get(receiverURL + rcv.Status.WebhookPath)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))

	code, _ = post(t, rcv.Status.WebhookPath, nil, bytes.Repeat([]byte("x"), receiver.MaxBodySize+1))
	g.Expect(code).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(requestedAt(t, app)).To(BeEmpty())
	code, _ = post(t, rcv.Status.WebhookPath, nil, bytes.Repeat([]byte("x"), receiver.MaxBodySize))
	g.Expect(code).To(Equal(http.StatusOK), "exactly the limit is fine")

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rcv), rcv)).To(Succeed())
	patch := client.MergeFrom(rcv.DeepCopy())
	rcv.Spec.Suspend = true
	// A merge patch: the controller may write the object meanwhile.
	g.Expect(k8s.Patch(ctx, rcv, patch)).To(Succeed())
	cond := waitReady(t, rcv, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.SuspendedReason))
	g.Eventually(func() int {
		code, _ := post(t, rcv.Status.WebhookPath, nil, nil)
		return code
	}, timeout, poll).Should(Equal(http.StatusServiceUnavailable))

	// A Receiver whose Secret lacks the token is not Ready and says which key.
	createSecret(t, ns, "empty", map[string]string{"other": "x"})
	broken := genericReceiver(ns, "broken", "empty")
	g.Expect(k8s.Create(ctx, broken)).To(Succeed())
	cond = waitReady(t, broken, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(Equal(`secret ` + ns + `/empty has no key "token"`))
	g.Expect(broken.Status.WebhookPath).To(BeEmpty())

	// A Receiver naming a kind a webhook cannot reconcile is stalled.
	createSecret(t, ns, "ok", map[string]string{"token": hookToken})
	wrongKind := broken.DeepCopy()
	wrongKind.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "wrong-kind"}
	wrongKind.Spec.SecretRef.Name = "ok"
	wrongKind.Spec.Resources[0].Kind = notificationv1.AlertKind
	g.Expect(k8s.Create(ctx, wrongKind)).To(Succeed())
	cond = waitReady(t, wrongKind, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InvalidSpecReason))
	g.Expect(cond.Message).To(ContainSubstring("cannot request a reconcile of kind Alert"))
}
