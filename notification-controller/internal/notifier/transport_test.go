package notifier

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
)

// certSecret is a certSecretRef's Secret with the given keys.
func certSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: data}
}

// pemOf encodes a server's certificate, the CA a client needs to trust it
// (httptest's certificate is self-signed).
func pemOf(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestCertSecretRefTrustsItsCA: a provider behind a certificate the
// system does not trust is refused without certSecretRef and reached
// with its ca.crt; a server asking for a client certificate gets the one
// of tls.crt and tls.key, through the same policy-checking client.
func TestCertSecretRefTrustsItsCA(t *testing.T) {
	g := NewWithT(t)
	var clientCerts [][]*x509.Certificate
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientCerts = append(clientCerts, r.TLS.PeerCertificates)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	client := NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second)

	n, err := New(Config{Type: notificationv1.GenericProvider, Address: srv.URL, Client: client})
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), testEvent())
	var unknown x509.UnknownAuthorityError
	g.Expect(errors.As(err, &unknown)).To(BeTrue(), "without the CA: %v", err)
	g.Expect(clientCerts).To(BeEmpty())

	caOnly, err := tlsFromSecret(certSecret(map[string][]byte{CAKey: pemOf(srv)}))
	g.Expect(err).NotTo(HaveOccurred())
	n, err = New(Config{Type: notificationv1.GenericProvider, Address: srv.URL, Client: client, TLS: caOnly})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(clientCerts).To(HaveLen(1))
	g.Expect(clientCerts[0]).To(BeEmpty(), "no client certificate without tls.crt")

	// A client certificate the server's CA signed; the legacy key name
	// of the CA is read.
	clientCA, certPEM, keyPEM := clientCertificate(t)
	mutual, err := tlsFromSecret(certSecret(map[string][]byte{legacyCAKey: pemOf(srv), CertKey: certPEM, KeyKey: keyPEM}))
	g.Expect(err).NotTo(HaveOccurred())
	srv.TLS.ClientCAs = x509.NewCertPool()
	srv.TLS.ClientCAs.AddCert(clientCA)
	n, _ = New(Config{Type: notificationv1.GenericProvider, Address: srv.URL, Client: client, TLS: mutual})
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(clientCerts).To(HaveLen(2))
	g.Expect(clientCerts[1]).To(HaveLen(1))
	g.Expect(clientCerts[1][0].Subject.CommonName).To(Equal("plumb-notification-controller"))
}

// clientCertificate returns a CA and a client certificate it signed, with
// its key, in PEM.
func clientCertificate(t *testing.T) (ca *x509.Certificate, certPEM, keyPEM []byte) {
	t.Helper()
	g := NewWithT(t)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err = x509.ParseCertificate(caDER)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "plumb-notification-controller"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	return ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// TestCertSecretRefErrors name the key at fault and never its value.
func TestCertSecretRefErrors(t *testing.T) {
	for _, tc := range []struct {
		data map[string][]byte
		want string
	}{
		{map[string][]byte{"other": []byte("x")}, `secret ns/certs has none of the keys "ca.crt", "tls.crt" and "tls.key"`},
		{map[string][]byte{CAKey: []byte("SECRET-not-pem")}, `secret ns/certs key "ca.crt" holds no PEM certificate`},
		{map[string][]byte{CertKey: []byte("SECRET")}, `secret ns/certs needs both "tls.crt" and "tls.key" for a client certificate, or neither`},
		{map[string][]byte{CertKey: []byte("SECRET"), KeyKey: []byte("SECRET")}, `secret ns/certs keys "tls.crt" and "tls.key" are not a PEM certificate and its private key`},
	} {
		_, err := tlsFromSecret(certSecret(tc.data))
		NewWithT(t).Expect(err).To(MatchError(tc.want))
	}
}

// TestProxyIsDialedUnderThePolicy: with a proxySecretRef the connection
// goes to the proxy, so the address policy judges the proxy's address: a
// loopback proxy is refused, permanently, unless loopback is allowed, and
// then it gets the request for the provider's address with the Secret's
// credentials.
func TestProxyIsDialedUnderThePolicy(t *testing.T) {
	g := NewWithT(t)
	type seen struct{ target, auth string }
	var got []seen
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A forward proxy gets the absolute URL of an http:// delivery.
		got = append(got, seen{r.URL.String(), r.Header.Get("Proxy-Authorization")})
	}))
	defer proxy.Close()
	u, err := proxyFromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "proxy"},
		Data: map[string][]byte{AddressKey: []byte(proxy.URL), UsernameKey: []byte("squid"), PasswordKey: []byte("p4ss")}})
	g.Expect(err).NotTo(HaveOccurred())

	// The provider's address is public; only the proxy is on loopback.
	const target = "http://hooks.example.com/plumb"
	n, err := New(Config{Type: notificationv1.GenericProvider, Address: target, Proxy: u,
		Client: NewHTTPClient(AddressPolicy{AllowPrivate: true}, 5*time.Second)})
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), testEvent())
	var refused *RefusedAddressError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	g.Expect(IsPermanent(err)).To(BeTrue())
	g.Expect(got).To(BeEmpty())

	n, _ = New(Config{Type: notificationv1.GenericProvider, Address: target, Proxy: u,
		Client: NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second)})
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(got).To(Equal([]seen{{target, basicCredentials("squid", "p4ss")}}))

	for address, want := range map[string]string{
		"":                    `secret ns/proxy has no key "address" (the proxy's URL)`,
		"socks5://proxy:1080": `secret ns/proxy key "address" must be an http:// or https:// URL, not socks5://`,
		"proxy:3128":          `secret ns/proxy key "address" is not a valid URL`,
	} {
		_, err := proxyFromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "proxy"},
			Data: map[string][]byte{AddressKey: []byte(address)}})
		g.Expect(err).To(MatchError(want), address)
	}
}
