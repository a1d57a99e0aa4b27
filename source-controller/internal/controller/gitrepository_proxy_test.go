package controller

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// recordingProxy is an HTTP proxy on 127.0.0.1, forwarding absolute-form
// requests and tunnelling CONNECT, that asks for basic credentials and
// records the paths it forwarded.
type recordingProxy struct {
	*httptest.Server
	user, password string

	mu    sync.Mutex
	paths []string
}

func newRecordingProxy(t *testing.T, user, password string) *recordingProxy {
	p := &recordingProxy{user: user, password: password}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProxy) serve(w http.ResponseWriter, r *http.Request) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.password))
	if r.Header.Get("Proxy-Authorization") != want {
		w.Header().Set("Proxy-Authenticate", `Basic realm="proxy"`)
		http.Error(w, "proxy credentials required", http.StatusProxyAuthRequired)
		return
	}
	p.mu.Lock()
	p.paths = append(p.paths, r.Method+" "+r.URL.Path)
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		upstream, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		go func() { _, _ = io.Copy(upstream, conn); upstream.Close() }()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *recordingProxy) forwarded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.paths...)
}

func TestProxySecretRefSendsTheFetchThroughTheProxy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	proxy := newRecordingProxy(t, "proxy-user", "proxy-pass")
	ns := namespace(t)
	secret := basicAuth(t, ns)
	credentials(t, ns, "proxy", map[string]string{"address": proxy.URL, "username": "proxy-user", "password": "proxy-pass"})
	credentials(t, ns, "proxy-wrong", map[string]string{"address": proxy.URL, "username": "proxy-user", "password": "wrong"})
	credentials(t, ns, "proxy-bad-address", map[string]string{"address": "ftp://127.0.0.1:1"})

	// Through the proxy: the listing and the clone both go there.
	obj := newGitRepository(ns, "proxied", repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
	obj.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	obj = waitReady(t, keyOf(obj), "main@sha1:"+c1)
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))
	path := "/" + repo.Name() + ".git"
	g.Expect(proxy.forwarded()).To(ContainElements(
		"GET "+path+"/info/refs", "POST "+path+"/git-upload-pack"))

	// An https:// remote is reached through a CONNECT tunnel: a TLS front
	// of the same Git server, its certificate trusted through ca.crt.
	backend, err := url.Parse(gitSrv.HTTPAddress())
	g.Expect(err).NotTo(HaveOccurred())
	tlsFront := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(tlsFront.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsFront.Certificate().Raw})
	credentials(t, ns, "git-auth-tls", map[string]string{"username": gitUser, "password": gitPassword, "ca.crt": string(caPEM)})
	tlsObj := newGitRepository(ns, "proxied-tls", tlsFront.URL+path, &meta.LocalObjectReference{Name: "git-auth-tls"}, &sourcev1.GitRepositoryRef{Branch: "main"})
	tlsObj.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	g.Expect(k8s.Create(ctx, tlsObj)).To(Succeed())
	tlsObj = waitReady(t, keyOf(tlsObj), "main@sha1:"+c1)
	g.Expect(tlsObj.Status.Artifact.Digest).To(Equal(obj.Status.Artifact.Digest))
	g.Expect(proxy.forwarded()).To(ContainElement("CONNECT "))

	tests := []struct {
		name, url, proxySecret, reason, message string
	}{
		{name: "wrong-proxy-password", url: repo.URL(), proxySecret: "proxy-wrong", reason: sourcev1.GitOperationFailedReason, message: "407"},
		{name: "absent", url: repo.URL(), proxySecret: "absent", reason: sourcev1.ProxyConfigErrorReason, message: "spec.proxySecretRef: Secret " + ns + "/absent not found"},
		{name: "bad-address", url: repo.URL(), proxySecret: "proxy-bad-address", reason: sourcev1.ProxyConfigErrorReason, message: `unsupported proxy scheme "ftp"`},
		{name: "ssh", url: "ssh://git@127.0.0.1:1/repo.git", proxySecret: "proxy", reason: sourcev1.ProxyConfigErrorReason, message: "a proxy is only used for http:// and https:// URLs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, tt.name, tt.url, secret, &sourcev1.GitRepositoryRef{Branch: "main"})
			obj.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: tt.proxySecret}
			if strings.HasPrefix(tt.url, "ssh://") {
				obj.Spec.SecretRef = nil
			}
			g.Expect(k8s.Create(ctx, obj)).To(Succeed())
			obj = waitFailed(t, keyOf(obj), tt.reason)
			g.Expect(condition(obj, sourcev1.FetchFailedCondition).Message).To(ContainSubstring(tt.message))
			g.Expect(obj.Status.Artifact).To(BeNil())
		})
	}
}
