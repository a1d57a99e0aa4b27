package localenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server and a real node's kubelet authenticate each other as in
// a cluster a bootstrap tool sets up: the API server calls the kubelet
// (logs, exec, port-forward) with a client certificate of its own, which
// the kubelet accepts because it trusts the cluster's client CA, and the
// kubelet asks the API server (a SubjectAccessReview, as the node) whether
// that user may; RBAC grants it through system:kubelet-api-admin. Nobody
// else, anonymous requests included, reaches the kubelet's API.
const (
	// KubeletClientUser is the API server's user towards kubelets.
	KubeletClientUser = "plumb-apiserver-kubelet-client"
	// clientCAName is the client CA's file in the API server's folder.
	clientCAName = "client-ca.crt"
)

// clientCertAuthn authenticates users by client certificates, as envtest's
// own authenticator does, with a CA made before the API server starts:
// envtest's writes its CA only in Start, too late to issue the API server's
// kubelet client certificate, a flag of the API server. The admin's, the
// node's and the API server's certificates all come from it.
type clientCertAuthn struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
}

var _ envtest.Authn = (*clientCertAuthn)(nil)

func newClientCertAuthn(certDir string) (*clientCertAuthn, error) {
	ca, key, err := newCA("plumb-local-client-ca")
	if err != nil {
		return nil, err
	}
	return &clientCertAuthn{ca: ca, caKey: key, caFile: filepath.Join(certDir, clientCAName)}, nil
}

func (a *clientCertAuthn) Configure(_ string, args *envtest.Arguments) error {
	args.Set("client-ca-file", a.caFile)
	return nil
}

func (a *clientCertAuthn) Start() error {
	return os.WriteFile(a.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.ca.Raw}), 0o644)
}

func (a *clientCertAuthn) Stop() error { return nil }

func (a *clientCertAuthn) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	certPEM, keyPEM, err := a.issue(user.Name, user.Groups)
	if err != nil {
		return nil, fmt.Errorf("a client certificate for %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

// issue is a client certificate for name in groups: the API server reads
// the user from the common name and the groups from the organizations.
func (a *clientCertAuthn) issue(name string, groups []string) (certPEM, keyPEM []byte, err error) {
	return newLeafCert(a.ca, a.caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// configureKubeletClient gives the API server its client certificate
// towards kubelets, written next to its serving certificate.
func configureKubeletClient(api *envtest.APIServer, authn *clientCertAuthn, certDir string) error {
	certPEM, keyPEM, err := authn.issue(KubeletClientUser, nil)
	if err != nil {
		return err
	}
	crt, key := filepath.Join(certDir, "kubelet-client.crt"), filepath.Join(certDir, "kubelet-client.key")
	if err := os.WriteFile(crt, certPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return err
	}
	args := api.Configure()
	args.Set("kubelet-client-certificate", crt)
	args.Set("kubelet-client-key", key)
	return nil
}

// authorizeKubeletClient lets the API server's kubelet client use every
// part of the kubelet's API (logs, exec, port-forward, stats), the
// ClusterRole the API server ships for that user.
func (e *Env) authorizeKubeletClient(ctx context.Context) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletClientUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KubeletClientUser}},
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding %s to system:kubelet-api-admin: %w", KubeletClientUser, err)
	}
	return nil
}
