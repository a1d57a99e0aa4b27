package controller

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/ociartifact"
	"plumb.dev/pkg/testtar"
)

// An HTTPS registry whose certificate only spec.certSecretRef's ca.crt
// vouches for: refused without it, pulled with it, and pulled through
// the CONNECT tunnel of spec.proxySecretRef's proxy when one is named.
func TestOCIRepositoryTrustsCertSecretRefAndGoesThroughProxySecretRef(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "https://")
	digest := pushTLS(t, reg, host+"/tls/app:v1", configMap("tls"))
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.Certificate().Raw})
	proxy := newRecordingProxy(t, "proxy-user", "proxy-pass")
	ns := namespace(t)
	credentials(t, ns, "registry-ca", map[string]string{"ca.crt": string(caPEM)})
	credentials(t, ns, "no-tls-keys", map[string]string{"username": "x"})
	credentials(t, ns, "proxy", map[string]string{"address": proxy.URL, "username": "proxy-user", "password": "proxy-pass"})
	credentials(t, ns, "proxy-bad-address", map[string]string{"address": "ftp://127.0.0.1:1"})
	https := func(name string, cert, proxy string) *sourcev1.OCIRepository {
		o := newOCIRepository(ns, name, "oci://"+host+"/tls/app", &sourcev1.OCIRepositoryRef{Tag: "v1"})
		o.Spec.Insecure = false
		if cert != "" {
			o.Spec.CertSecretRef = &meta.LocalObjectReference{Name: cert}
		}
		if proxy != "" {
			o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: proxy}
		}
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		return o
	}

	untrusted := https("untrusted", "", "")
	waitHelmFailed(t, untrusted, sourcev1.OCIPullFailedReason)
	g.Expect(conditionOf(untrusted, meta.ReadyCondition).Message).To(ContainSubstring("certificate"))
	g.Expect(untrusted.Status.Artifact).To(BeNil())

	trusted := https("trusted", "registry-ca", "")
	waitHelmReady(t, trusted, "v1@"+digest)
	g.Expect(files(t, download(t, trusted.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("tls")}))
	g.Expect(proxy.forwarded()).To(BeEmpty(), "no proxy was named")

	proxied := https("proxied", "registry-ca", "proxy")
	waitHelmReady(t, proxied, "v1@"+digest)
	g.Expect(proxied.Status.Artifact.Digest).To(Equal(trusted.Status.Artifact.Digest))
	g.Expect(proxy.forwarded()).To(ContainElement("CONNECT "), "the registry was reached through the proxy")

	tests := []struct{ name, cert, proxy, reason, message string }{
		{"cert-absent", "absent", "", sourcev1.AuthenticationFailedReason, "spec.certSecretRef: Secret " + ns + "/absent not found"},
		{"cert-no-keys", "no-tls-keys", "", sourcev1.AuthenticationFailedReason, "holds none of tls.crt, tls.key, ca.crt"},
		{"proxy-absent", "registry-ca", "absent", sourcev1.ProxyConfigErrorReason, "spec.proxySecretRef: Secret " + ns + "/absent not found"},
		{"proxy-bad-address", "registry-ca", "proxy-bad-address", sourcev1.ProxyConfigErrorReason, `unsupported proxy scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			o := https(tt.name, tt.cert, tt.proxy)
			waitHelmFailed(t, o, tt.reason)
			fetch := conditionOf(o, sourcev1.FetchFailedCondition)
			g.Expect(fetch.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(fetch.Message).To(ContainSubstring(tt.message))
			g.Expect(o.Status.Artifact).To(BeNil())
		})
	}
}

// pushTLS pushes a one-file artifact to ref on the TLS registry srv and
// returns its manifest digest.
func pushTLS(t *testing.T, srv *httptest.Server, ref, cm string) string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ociartifact.ConfigMediaType)
	layer := static.NewLayer(testtar.TarGz(t, testtar.File("cm.yaml", cm)), ociartifact.ContentMediaType)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer}); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithTransport(srv.Client().Transport.(*http.Transport))); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
