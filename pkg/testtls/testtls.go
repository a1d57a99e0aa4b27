package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Authority is a certificate authority made for one test, and the
// server and client certificates it signed.
type Authority struct {
	CA         []byte // the CA certificate, PEM (a Secret's ca.crt)
	ClientCert []byte // the client certificate, PEM (tls.crt)
	ClientKey  []byte // its EC private key, PEM (tls.key)

	pool   *x509.CertPool
	server tls.Certificate
}

// New makes an authority named name (the CA's common name). The
// certificates are valid from an hour ago for a day: the validity is
// what x509 checks against the clock, not something a test asserts.
func New(name string) (*Authority, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	a := &Authority{CA: pemOf("CERTIFICATE", caDER), pool: x509.NewCertPool()}
	a.pool.AddCert(ca)

	sign := func(serial int64, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
			NotBefore: caTmpl.NotBefore, NotAfter: caTmpl.NotAfter,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemOf("CERTIFICATE", der), pemOf("EC PRIVATE KEY", keyDER), nil
	}
	serverCert, serverKey, err := sign(2, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	if a.server, err = tls.X509KeyPair(serverCert, serverKey); err != nil {
		return nil, err
	}
	if a.ClientCert, a.ClientKey, err = sign(3, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	return a, nil
}

// ServerConfig serves the server certificate; with clientAuth it also
// requires a client certificate the authority signed.
func (a *Authority) ServerConfig(clientAuth bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{a.server}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, a.pool
	}
	return c
}

// ClientConfig trusts the authority and presents the client
// certificate, for a test's own requests to a server of ServerConfig.
func (a *Authority) ClientConfig() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(a.ClientCert, a.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("the client certificate: %w", err)
	}
	return &tls.Config{RootCAs: a.pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

func pemOf(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
