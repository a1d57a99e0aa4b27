package controller

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
)

// TestProviderSecret walks a Provider from a missing Secret, to a Secret
// without the address key, to a working one: each state is on the Ready
// condition, naming what is missing, and the Secret's changes are picked up
// without touching the Provider.
func TestProviderSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec: notificationv1.ProviderSpec{
			Type:      notificationv1.SlackProvider,
			SecretRef: &meta.LocalObjectReference{Name: "slack-url"},
		},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	cond := waitReady(t, p, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(ContainSubstring("secret " + ns + "/slack-url not found"))
	// The per-object metrics every controller keeps: Ready as a gauge.
	labels := map[string]string{"namespace": ns, "name": "slack"}
	g.Eventually(func() float64 { return gauge(t, "plumb_notification_provider_ready", labels) }, timeout, poll).Should(Equal(0.0))

	// (A "token" would make it a bot-token Provider, which needs no address.)
	secret := createSecret(t, ns, "slack-url", map[string]string{"headers": "X-Hook-Token: xoxb-not-shown"})
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(readyOf(p).Message).To(ContainSubstring(`has no key "address"`))
	}, timeout, poll).Should(Succeed())
	g.Expect(readyOf(p).Message).NotTo(ContainSubstring("xoxb"), "no secret value in conditions")

	secret.StringData = map[string]string{"address": "https://hooks.slack.example/services/T0/B0/SECRETPATH"}
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	cond = waitReady(t, p, metav1.ConditionTrue)
	g.Expect(cond.Message).To(Equal("slack provider is ready"))
	g.Eventually(func() float64 { return gauge(t, "plumb_notification_provider_ready", labels) }, timeout, poll).Should(Equal(1.0))
	g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))

	// The status is written by notification-controller's field manager.
	managers := map[string]bool{}
	for _, mf := range p.ManagedFields {
		if mf.Subresource == "status" {
			managers[mf.Manager] = true
		}
	}
	g.Expect(managers).To(HaveKey(FieldManager))

	// Flux's series beside Plumb's, kind="Provider"; a deleted Provider's
	// series go (the kind has no finalizer that would drop them).
	flux := map[string]string{"kind": notificationv1.ProviderKind, "namespace": ns, "name": "slack"}
	fluxStatus := func(status string) func() float64 {
		return func() float64 {
			return gauge(t, "gotk_reconcile_condition", withLabel(withLabel(flux, "type", meta.ReadyCondition), "status", status))
		}
	}
	g.Eventually(fluxStatus("True"), timeout, poll).Should(Equal(1.0))
	g.Expect(fluxStatus("False")()).To(Equal(0.0))
	g.Expect(fluxStatus("Deleted")()).To(Equal(0.0))
	g.Expect(gauge(t, "gotk_suspend_status", flux)).To(Equal(0.0))
	g.Expect(k8s.Delete(ctx, p)).To(Succeed())
	g.Eventually(fluxStatus("True"), timeout, poll).Should(Equal(-2.0), "no series once deleted")
	g.Expect(gauge(t, "gotk_suspend_status", flux)).To(Equal(-2.0))
	g.Expect(gauge(t, "plumb_notification_provider_ready", labels)).To(Equal(-2.0))
}

// withLabel is labels and name=value.
func withLabel(labels map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// TestProviderValidation covers the other ways a Provider is not ready.
func TestProviderValidation(t *testing.T) {
	ns := newNamespace(t)
	for _, tc := range []struct {
		name    string
		spec    notificationv1.ProviderSpec
		secret  map[string]string
		reason  string
		message string
	}{
		{
			name:    "hmac-without-token",
			spec:    notificationv1.ProviderSpec{Type: notificationv1.GenericHMACProvider, SecretRef: &meta.LocalObjectReference{Name: "hmac-without-token"}},
			secret:  map[string]string{"address": "https://example.com/hook"},
			reason:  notificationv1.SecretNotReadyReason,
			message: `secret ` + ns + `/hmac-without-token has no key "token"`,
		},
		{
			name:    "no-address",
			spec:    notificationv1.ProviderSpec{Type: notificationv1.GenericProvider},
			reason:  meta.InvalidSpecReason,
			message: "no address",
		},
		{
			name:    "wrong-scheme",
			spec:    notificationv1.ProviderSpec{Type: notificationv1.NATSProvider, Channel: "alerts", Address: "https://example.com"},
			reason:  meta.InvalidSpecReason,
			message: "must be a nats:// or tls:// URL",
		},
		{
			name:    "headers-not-a-map",
			spec:    notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, SecretRef: &meta.LocalObjectReference{Name: "headers-not-a-map"}},
			secret:  map[string]string{"address": "https://example.com/hook", "headers": "- a list"},
			reason:  notificationv1.SecretNotReadyReason,
			message: `key "headers" is not a YAML map`,
		},
		{
			name:   "suspended",
			spec:   notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, Address: "https://example.com", Suspend: true},
			reason: meta.SuspendedReason,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.secret != nil {
				createSecret(t, ns, tc.name, tc.secret)
			}
			p := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}, Spec: tc.spec}
			g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
			cond := waitReady(t, p, metav1.ConditionFalse)
			g.Expect(cond.Reason).To(Equal(tc.reason))
			g.Expect(cond.Message).To(ContainSubstring(tc.message))
		})
	}
}

// TestAlertReadiness: an Alert waits for its Provider, and a bad
// expression stalls it.
func TestAlertReadiness(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	a := createAlert(t, ns, "waits", "later", nil)
	cond := waitReady(t, a, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.ProviderNotReadyReason))
	g.Expect(cond.Message).To(Equal("provider later not found"))

	createProvider(t, ns, "later", notificationv1.GenericProvider, "https://example.com/hook", nil)
	cond = waitReady(t, a, metav1.ConditionTrue)
	g.Expect(cond.Message).To(Equal("routing events to provider later"))

	bad := createAlert(t, ns, "bad-regex", "later", func(s *notificationv1.AlertSpec) {
		s.ExclusionList = []string{"ok", "(unclosed"}
	})
	cond = waitReady(t, bad, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InvalidSpecReason))
	g.Expect(cond.Message).To(ContainSubstring("spec.exclusionList[1]"))
	g.Expect(bad.Status.Conditions).To(ContainElement(And(
		HaveField("Type", meta.StalledCondition), HaveField("Status", metav1.ConditionTrue))))

	// Fixing the expression makes it Ready.
	patch := client.MergeFrom(bad.DeepCopy())
	bad.Spec.ExclusionList = []string{"ok"}
	// A merge patch: the controller may write the object meanwhile.
	g.Expect(k8s.Patch(ctx, bad, patch)).To(Succeed())
	waitReady(t, bad, metav1.ConditionTrue)
	g.Expect(bad.Status.Conditions).NotTo(ContainElement(HaveField("Type", meta.StalledCondition)))

	// A Secret unrelated to any Provider changes nothing.
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}})).To(Succeed())
}

// TestProviderTypesOfFlux: zoom, incident.io, otel and the change request
// comment Providers are Ready with their Secret's address and token.
func TestProviderTypesOfFlux(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	for typ, address := range map[string]string{
		notificationv1.ZoomProvider:       "https://integrations.zoom.us/chat/webhooks/incomingwebhook/AbCdEf",
		notificationv1.IncidentioProvider: "https://api.incident.io/v2/alert_events/http/01HSOURCE",
		notificationv1.OTELProvider:       "https://otel-collector.example.com:4318/v1/traces",

		notificationv1.GitHubPullRequestCommentProvider:  "https://github.com/org/repo",
		notificationv1.GitLabMergeRequestCommentProvider: "https://gitlab.example.com/group/project",
		notificationv1.GiteaPullRequestCommentProvider:   "https://gitea.example.com/org/repo",
	} {
		name := strings.ReplaceAll(typ, ".", "")
		createSecret(t, ns, name, map[string]string{"address": address, "token": "t0ken"})
		p := &notificationv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       notificationv1.ProviderSpec{Type: typ, SecretRef: &meta.LocalObjectReference{Name: name}},
		}
		g.Expect(k8s.Create(ctx, p)).To(Succeed())
		g.Expect(waitReady(t, p, metav1.ConditionTrue).Message).To(Equal(typ + " provider is ready"))
	}
}

// TestProviderCloudBuses: a googlepubsub Provider (the project ID as its
// address, the topic as its channel, a service account's JSON key as its
// token) and an azureeventhub Provider (a connection string in its
// Secret) are Ready; the API server refuses one without the Secret their
// credentials are in, a googlepubsub Provider without a topic, and a
// connection string in spec.address.
func TestProviderCloudBuses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, ns, "gcp-key", map[string]string{"token": serviceAccountKeyJSON(t), "headers": "team: apps\n"})
	createSecret(t, ns, "event-hub", map[string]string{"address": "Endpoint=sb://plumb.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=a2V5;EntityPath=events"})
	for _, p := range []*notificationv1.Provider{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pubsub"}, Spec: notificationv1.ProviderSpec{
			Type: notificationv1.GooglePubSubProvider, Address: "my-project", Channel: "plumb-events",
			SecretRef: &meta.LocalObjectReference{Name: "gcp-key"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "eventhub"}, Spec: notificationv1.ProviderSpec{
			Type: notificationv1.AzureEventHubProvider, SecretRef: &meta.LocalObjectReference{Name: "event-hub"}}},
	} {
		g.Expect(k8s.Create(ctx, p)).To(Succeed())
		g.Expect(waitReady(t, p, metav1.ConditionTrue).Message).To(Equal(p.Spec.Type + " provider is ready"))
	}

	for name, tc := range map[string]struct {
		spec notificationv1.ProviderSpec
		want string
	}{
		"no secret": {notificationv1.ProviderSpec{Type: notificationv1.GooglePubSubProvider, Address: "my-project", Channel: "t1"},
			"googlepubsub and azureeventhub providers need spec.secretRef"},
		"no topic": {notificationv1.ProviderSpec{Type: notificationv1.GooglePubSubProvider, Address: "my-project", SecretRef: &meta.LocalObjectReference{Name: "gcp-key"}},
			"a googlepubsub provider needs spec.channel"},
		"key in spec": {notificationv1.ProviderSpec{Type: notificationv1.AzureEventHubProvider, Address: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b", SecretRef: &meta.LocalObjectReference{Name: "event-hub"}},
			"an azureeventhub connection string holds a key"},
		"not a URL": {notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, Address: "my-project"},
			"address must be an http(s):// URL"},
	} {
		err := k8s.Create(ctx, &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, " ", "-")}, Spec: tc.spec})
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.want), name)
	}
}

// serviceAccountKeyJSON is a Google service account's JSON key with a new
// RSA key.
func serviceAccountKeyJSON(t *testing.T) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "my-project", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "plumb@my-project.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
	})
	return string(b)
}
