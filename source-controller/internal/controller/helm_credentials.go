package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/source-controller/internal/helm"
)

// errCredentials marks a Secret that is missing or unusable: the reason is
// AuthenticationFailed, as for a remote that refuses the credentials.
var errCredentials = errors.New("credentials")

type credentialsError struct{ err error }

func (e credentialsError) Error() string         { return e.err.Error() }
func (e credentialsError) Unwrap() []error       { return []error{e.err, errCredentials} }
func credentialsErrorf(f string, a ...any) error { return credentialsError{fmt.Errorf(f, a...)} }

// secretData reads the data of the Secret ns/name that field names; a
// missing Secret is a credentials error (AuthenticationFailed).
func secretData(ctx context.Context, c client.Reader, ns, field, name string) (map[string][]byte, error) {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, credentialsErrorf("%s: Secret %s/%s not found", field, ns, name)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// helmCredentials reads a HelmRepository's secretRef (username and
// password; tls.crt, tls.key and ca.crt when certSecretRef is not set) and
// certSecretRef (tls.crt, tls.key, ca.crt).
func helmCredentials(ctx context.Context, c client.Reader, obj *sourcev1.HelmRepository) (helm.Credentials, error) {
	creds := helm.Credentials{PassCredentials: obj.Spec.PassCredentials}
	read := func(field, name string) (map[string][]byte, error) {
		return secretData(ctx, c, obj.Namespace, field, name)
	}
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := read("spec.secretRef", ref.Name)
		if err != nil {
			return creds, err
		}
		creds.Username, creds.Password = string(data["username"]), string(data["password"])
		if (creds.Username == "") != (creds.Password == "") {
			return creds, credentialsErrorf("spec.secretRef: Secret %s/%s must hold both username and password, or neither", obj.Namespace, ref.Name)
		}
		if obj.Spec.CertSecretRef == nil {
			if creds.TLS, err = helm.TLSConfig(data); err != nil {
				return creds, credentialsErrorf("spec.secretRef: Secret %s/%s: %v", obj.Namespace, ref.Name, err)
			}
		}
	}
	if ref := obj.Spec.CertSecretRef; ref != nil {
		data, err := read("spec.certSecretRef", ref.Name)
		if err != nil {
			return creds, err
		}
		if creds.TLS, err = helm.TLSConfig(data); err != nil {
			return creds, credentialsErrorf("spec.certSecretRef: Secret %s/%s: %v", obj.Namespace, ref.Name, err)
		}
		if creds.TLS == nil {
			return creds, credentialsErrorf("spec.certSecretRef: Secret %s/%s holds none of tls.crt, tls.key, ca.crt", obj.Namespace, ref.Name)
		}
	}
	return creds, nil
}
