package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// testCA is a certificate authority made by a test: it signs a server
// certificate for 127.0.0.1 and a client certificate, in the PEM a
// Secret's ca.crt, tls.crt and tls.key hold.
type testCA struct {
	CA                    []byte // ca.crt
	ClientCert, ClientKey []byte // tls.crt, tls.key
	pool                  *x509.CertPool
	server                tls.Certificate
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// The validity is what x509 checks against the clock, not an
	// assertion on it.
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "image-controller test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCA{CA: pemOf("CERTIFICATE", der), pool: x509.NewCertPool()}
	c.pool.AddCert(ca)
	serverCert, serverKey := c.sign(t, ca, key, 2, x509.ExtKeyUsageServerAuth)
	if c.server, err = tls.X509KeyPair(serverCert, serverKey); err != nil {
		t.Fatal(err)
	}
	c.ClientCert, c.ClientKey = c.sign(t, ca, key, 3, x509.ExtKeyUsageClientAuth)
	return c
}

// sign makes a certificate for 127.0.0.1 with usage, signed by ca.
func (c *testCA) sign(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: ca.NotBefore, NotAfter: ca.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("CERTIFICATE", der), pemOf("EC PRIVATE KEY", keyDER)
}

func pemOf(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// ServerConfig serves the server certificate; with clientAuth it
// requires a client certificate of the CA.
func (c *testCA) ServerConfig(clientAuth bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{c.server}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, c.pool
	}
	return cfg
}

// ClientConfig trusts the CA and presents the client certificate, for a
// test's own requests.
func (c *testCA) ClientConfig(t *testing.T) *tls.Config {
	t.Helper()
	pair, err := tls.X509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}
