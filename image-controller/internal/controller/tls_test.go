package controller

import (
	"crypto/tls"
	"testing"

	"plumb.dev/pkg/testtls"
)

// newTestCA is a certificate authority made by a test: it signs a server
// certificate for 127.0.0.1 and a client certificate, in the PEM a
// Secret's ca.crt, tls.crt and tls.key hold.
func newTestCA(t *testing.T) *testtls.Authority {
	t.Helper()
	ca, err := testtls.New("image-controller test CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// clientConfig trusts ca and presents its client certificate, for a
// test's own requests.
func clientConfig(t *testing.T, ca *testtls.Authority) *tls.Config {
	t.Helper()
	cfg, err := ca.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
