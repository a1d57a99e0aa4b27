package controller

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/testtls"
)

// tlsRegistry serves an in-process registry over HTTPS with ca's server
// certificate, requiring a client certificate of ca with clientAuth, and
// pushes image:tag for each tag; it returns the image.
func tlsRegistry(t *testing.T, ca *testtls.Authority, clientAuth bool, tags ...string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	srv.TLS = ca.ServerConfig(clientAuth)
	// Refused handshakes are what these tests are about.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	image := strings.TrimPrefix(srv.URL, "https://") + "/app"
	pushWith(t, image, []remote.Option{remote.WithTransport(&http.Transport{TLSClientConfig: clientConfig(t, ca)})}, tags...)
	return image
}

// certRepository creates an ImageRepository of image whose certSecretRef
// is a Secret holding data; no data, no certSecretRef.
func certRepository(t *testing.T, ns, name, image string, data map[string][]byte) *imagev1.ImageRepository {
	t.Helper()
	g := NewWithT(t)
	repo := newRepository(ns, name, image)
	if data != nil {
		g.Expect(k8s.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data,
		})).To(Succeed())
		repo.Spec.CertSecretRef = &meta.LocalObjectReference{Name: name}
	}
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	return repo
}

// A registry whose certificate is signed by a private CA: without
// certSecretRef the scan fails naming the x509 error; with the CA's
// ca.crt it succeeds.
func TestImageRepositoryTrustsTheCAOfCertSecretRef(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)
	image := tlsRegistry(t, ca, false, "1.0.0", "1.1.0")
	ns := namespace(t)

	untrusted := waitReady(t, certRepository(t, ns, "untrusted", image, nil), metav1.ConditionFalse, imagev1.ReadOperationFailedReason)
	g.Expect(readyOf(untrusted.Status.Conditions).Message).To(ContainSubstring("x509: certificate signed by unknown authority"))

	trusted := waitReady(t, certRepository(t, ns, "trusted", image, map[string][]byte{"ca.crt": ca.CA}), metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(trusted.Status.LastScanResult.TagCount).To(Equal(2))
}

// A registry that requires a client certificate: the CA alone is not
// enough; with tls.crt and tls.key the certificate is presented and the
// scan succeeds.
func TestImageRepositoryPresentsTheClientCertificateOfCertSecretRef(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)
	image := tlsRegistry(t, ca, true, "1.0.0")
	ns := namespace(t)

	anonymous := waitReady(t, certRepository(t, ns, "anonymous", image, map[string][]byte{"ca.crt": ca.CA}),
		metav1.ConditionFalse, imagev1.ReadOperationFailedReason)
	g.Expect(readyOf(anonymous.Status.Conditions).Message).To(ContainSubstring("certificate required"))

	withCert := waitReady(t, certRepository(t, ns, "client", image, map[string][]byte{
		"ca.crt": ca.CA, "tls.crt": ca.ClientCert, "tls.key": ca.ClientKey,
	}), metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(withCert.Status.LastScanResult.TagCount).To(Equal(1))
}
