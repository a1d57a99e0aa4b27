package localenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server as a real node's Pods reach it (docs/design/node.md, "Pods
// and the API server"): the `kubernetes` Service's cluster IP (the first of
// envtest's Service range 10.0.0.0/24), which kube-proxy sends to the
// advertised address, the bridge's (nodeIP), where the launcher forwards to
// the API server on 127.0.0.1 (bridgeproxy.go).
const kubernetesServiceIP = "10.0.0.1"

// inClusterNames are the names client-go and Pods call the API server by.
var inClusterNames = []string{
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
}

// configureInCluster makes the API server one a real node's Pods can use:
// advertised at the bridge's address, so the `kubernetes` Service's
// endpoint is where the launcher forwards to it; a serving certificate
// that also names the Service's IP, the bridge's and the in-cluster names
// (envtest's names localhost and 127.0.0.1 only); and the ServiceAccount
// admission plugin on (envtest turns it off), which gives each Pod its
// token volume. The serving CA and key and the service-account signing key
// are written to certDir before envtest looks there: envtest generates its
// own only when apiserver.crt is missing.
func configureInCluster(api *envtest.APIServer, certDir string) error {
	ca, caKey, err := newCA("plumb-local-apiserver-ca")
	if err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(kubernetesServiceIP), net.ParseIP(nodeIP)}
	names := append([]string{"localhost"}, inClusterNames...)
	certPEM, keyPEM, err := newServingCert(ca, caKey, ips, names)
	if err != nil {
		return err
	}
	_, saKey, err := newCA("plumb-local-service-accounts")
	if err != nil {
		return err
	}
	saKeyPEM, saPubPEM, err := keyPair(saKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"apiserver.crt": certPEM, "apiserver.key": keyPEM,
		// The names envtest gives them (--service-account-key-file and
		// --service-account-signing-key-file); kube-controller-manager
		// signs the token Secrets with the same key.
		"sa-signer.crt": saPubPEM, "sa-signer.key": saKeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return err
		}
	}
	api.SecureServing.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	args := api.Configure()
	args.Set("advertise-address", nodeIP)
	// envtest disables ServiceAccount because it runs no controller to
	// create the default ServiceAccounts; kube-controller-manager does here.
	args.Disable("disable-admission-plugins")
	// The kubelet has a node's identity (nodeidentity.go): the Node
	// authorizer gives it what its Pods use and no more, and
	// NodeRestriction keeps it to its own Node and Pods.
	args.Set("authorization-mode", "Node,RBAC")
	args.Set("enable-admission-plugins", "NodeRestriction")
	// Users by client certificates from a CA made here, so that the API
	// server's own certificate towards the kubelet is issued before it
	// starts (kubeletauth.go).
	authn, err := newClientCertAuthn(certDir)
	if err != nil {
		return err
	}
	api.SecureServing.Authn = authn
	return configureKubeletClient(api, authn, certDir)
}

func newCA(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServingCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, ips []net.IP, names []string) (certPEM, keyPEM []byte, err error) {
	return newLeafCert(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames:    names,
	})
}

// newLeafCert signs tmpl (its subject, uses and names) with ca, valid as
// long as ca, for a new key.
func newLeafCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), ca.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, _, err = keyPair(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, err
}

// keyPair is key's private key (SEC 1) and public key (PKIX) as PEM.
func keyPair(key *ecdsa.PrivateKey) (private, public []byte, err error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}
