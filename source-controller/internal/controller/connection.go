package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	"plumb.dev/source-controller/internal/git"
	"plumb.dev/source-controller/internal/helm"
)

// What Bucket and OCIRepository read the same way: spec.certSecretRef
// and spec.proxySecretRef, with Flux's keys.

// certSecretTLS reads spec.certSecretRef: ca.crt to trust, tls.crt and
// tls.key to present. nil without a ref; a missing Secret, or one with
// none of the keys or unusable PEM, is a credentials error
// (AuthenticationFailed, retried: the Secret may be fixed).
func certSecretTLS(ctx context.Context, c client.Reader, namespace string, ref *meta.LocalObjectReference) (*tls.Config, error) {
	if ref == nil {
		return nil, nil
	}
	data, err := secretData(ctx, c, namespace, "spec.certSecretRef", ref.Name)
	if err != nil {
		return nil, err
	}
	conf, err := helm.TLSConfig(data)
	if err != nil {
		return nil, credentialsErrorf("spec.certSecretRef: Secret %s/%s: %v", namespace, ref.Name, err)
	}
	if conf == nil {
		return nil, credentialsErrorf("spec.certSecretRef: Secret %s/%s holds none of tls.crt, tls.key, ca.crt", namespace, ref.Name)
	}
	return conf, nil
}

// proxySecretURL reads spec.proxySecretRef (address, username, password)
// into the proxy URL for requests to target (an http:// or https:// URL,
// for messages and to refuse other schemes). nil without a ref; every
// failure is a *proxyError (ProxyConfigError). The proxy's own address is
// checked when it is dialled, by the address policy of the transport.
func proxySecretURL(ctx context.Context, c client.Reader, namespace string, ref *meta.LocalObjectReference, target string) (*url.URL, error) {
	if ref == nil {
		return nil, nil
	}
	name := namespace + "/" + ref.Name
	data, err := secretData(ctx, c, namespace, "spec.proxySecretRef", ref.Name)
	if err != nil {
		return nil, &proxyError{err}
	}
	p, err := git.ProxyFromSecret(target, data, name)
	if err != nil {
		return nil, &proxyError{err}
	}
	u, err := p.FullURL()
	if err != nil {
		return nil, &proxyError{fmt.Errorf("spec.proxySecretRef: Secret %s: %w", name, err)}
	}
	return u, nil
}
