package controller

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// connectProxy is an HTTP proxy that tunnels CONNECT requests carrying
// the expected Proxy-Authorization, as squid does, and records the
// targets it tunneled to.
type connectProxy struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string
}

func newConnectProxy(t *testing.T, auth string) *connectProxy {
	p := &connectProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Proxy-Authorization") != auth {
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		upstream, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		p.mu.Lock()
		p.targets = append(p.targets, r.Host)
		p.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		go func() { _, _ = io.Copy(upstream, buf); upstream.Close() }()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *connectProxy) tunneled() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// TestProviderCertAndProxySecrets: a generic Provider behind a private CA
// and an authenticating proxy waits for its certSecretRef, is stalled
// while its proxy's credentials would travel over plain http:// without
// spec.insecure, and then delivers over TLS, trusting the Secret's CA,
// through a CONNECT tunnel of the proxy. A nats Provider cannot have a
// proxy: the API server refuses it.
func TestProviderCertAndProxySecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(hook.Close)
	got := newEndpoint(t)
	hook.Config.Handler = got.Config.Handler
	proxy := newConnectProxy(t, "Basic c3F1aWQ6cDRzcw==") // squid:p4ss

	createSecret(t, ns, "proxy", map[string]string{"address": proxy.URL, "username": "squid", "password": "p4ss"})
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: notificationv1.ProviderSpec{
			Type:           notificationv1.GenericProvider,
			Address:        hook.URL + "/hook",
			Timeout:        &metav1.Duration{Duration: 5 * time.Second},
			CertSecretRef:  &meta.LocalObjectReference{Name: "private-ca"},
			ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"},
		},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	cond := waitReady(t, p, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(Equal("secret " + ns + "/private-ca not found"))

	createSecret(t, ns, "private-ca", map[string]string{
		"ca.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})),
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(readyOf(p).Reason).To(Equal(meta.InsecureConnectionsDisallowedReason))
	}, timeout, poll).Should(Succeed())
	g.Expect(readyOf(p).Message).To(ContainSubstring("the generic provider's proxy has credentials"))
	g.Expect(readyOf(p).Message).NotTo(ContainSubstring("p4ss"))

	p.Spec.Insecure = true
	g.Expect(k8s.Update(ctx, p)).To(Succeed())
	waitReady(t, p, metav1.ConditionTrue)
	alert := createAlert(t, ns, "private", "private", nil)
	waitReady(t, alert, metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

	repo := gitRepository(t, ns, "podinfo", nil, false)
	controllers.Record(repo, events.SeverityInfo, "Succeeded", "stored artifact for revision main@sha1:1")
	g.Eventually(func() []string { return messagesOf(got.events(t)) }, timeout, poll).
		Should(Equal([]string{"stored artifact for revision main@sha1:1"}))
	g.Expect(proxy.tunneled()).To(Equal([]string{hook.Listener.Addr().String()}))

	nats := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nats"},
		Spec: notificationv1.ProviderSpec{Type: notificationv1.NATSProvider, Channel: "alerts", Address: "nats://nats.example.com:4222",
			ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"}},
	}
	err := k8s.Create(ctx, nats)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.proxySecretRef is for HTTP providers"))
}
