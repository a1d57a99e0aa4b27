package notifier

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	notificationv1 "plumb.dev/api/notification/v1"
)

// Keys of a Provider's Secret.
const (
	AddressKey  = "address"
	TokenKey    = "token"
	UsernameKey = "username"
	PasswordKey = "password"
	// HeadersKey holds a YAML map of extra HTTP headers.
	HeadersKey = "headers"
)

// ConfigFor resolves a Provider's configuration, reading its Secret through
// r. The error says what is missing (the Secret, or which key) without
// quoting any secret value.
func ConfigFor(ctx context.Context, r client.Reader, p *notificationv1.Provider) (Config, error) {
	cfg := Config{
		Type:        p.Spec.Type,
		Address:     p.Spec.Address,
		Channel:     p.Spec.Channel,
		Username:    p.Spec.Username,
		Insecure:    p.Spec.Insecure,
		ProviderUID: string(p.UID),
		Provider:    p,

		CommitStatusExpr: p.Spec.CommitStatusExpr,
		Credentials:      p.Spec.SecretRef != nil,

		ThreadPerObject: p.Spec.ThreadPerObject,
	}
	if ref := p.Spec.CertSecretRef; ref != nil {
		secret, err := readSecret(ctx, r, p.Namespace, ref.Name)
		if err != nil {
			return cfg, err
		}
		if cfg.TLS, err = tlsFromSecret(secret); err != nil {
			return cfg, err
		}
	}
	if ref := p.Spec.ProxySecretRef; ref != nil {
		secret, err := readSecret(ctx, r, p.Namespace, ref.Name)
		if err != nil {
			return cfg, err
		}
		if cfg.Proxy, err = proxyFromSecret(secret); err != nil {
			return cfg, err
		}
		if cfg.Proxy.User != nil && cfg.Proxy.Scheme == "http" && !cfg.Insecure {
			return cfg, &InsecureError{Type: p.Spec.Type, Proxy: true}
		}
	}
	if ref := p.Spec.SecretRef; ref != nil {
		secret, err := readSecret(ctx, r, p.Namespace, ref.Name)
		if err != nil {
			return cfg, err
		}
		if v, ok := secret.Data[AddressKey]; ok {
			cfg.Address = string(v)
		}
		cfg.Token = string(secret.Data[TokenKey])
		cfg.User = string(secret.Data[UsernameKey])
		cfg.Password = string(secret.Data[PasswordKey])
		if h, ok := secret.Data[HeadersKey]; ok {
			if err := yaml.Unmarshal(h, &cfg.Headers); err != nil {
				return cfg, fmt.Errorf("secret %s/%s key %q is not a YAML map of header names to values", p.Namespace, ref.Name, HeadersKey)
			}
		}
		if cfg.GitHubApp, err = githubAppOf(p.Spec.Type, secret); err != nil {
			return cfg, err
		}
		if need := kinds[p.Spec.Type].token; need != "" && cfg.Token == "" && cfg.GitHubApp == nil {
			return cfg, fmt.Errorf("secret %s/%s has no key %q (%s)%s", p.Namespace, ref.Name, TokenKey, need, orGitHubApp(p.Spec.Type))
		}
		// A Slack bot token means chat.postMessage (Flux's form), on
		// Slack's own API unless an address says otherwise.
		if p.Spec.Type == notificationv1.SlackProvider && cfg.Token != "" && cfg.Address == "" {
			cfg.Address = SlackPostMessageURL
		}
		if cfg.Address == "" && kinds[p.Spec.Type].defaultAddress == "" {
			return cfg, fmt.Errorf("secret %s/%s has no key %q and spec.address is empty", p.Namespace, ref.Name, AddressKey)
		}
	}
	if need := kinds[p.Spec.Type].token; need != "" && cfg.Token == "" && cfg.GitHubApp == nil {
		return cfg, errNoToken(p.Spec.Type, need)
	}
	if cfg.Address == "" {
		cfg.Address = kinds[p.Spec.Type].defaultAddress
	}
	if cfg.Address == "" {
		return cfg, fmt.Errorf("no address: set spec.address or the key %q in spec.secretRef", AddressKey)
	}
	if kinds[p.Spec.Type].ownAddress {
		// A project ID, a connection string: build checks it, and
		// the endpoint it makes is https://.
		return cfg, nil
	}
	u, err := checkAddress(p.Spec.Type, cfg.Address)
	if err != nil {
		return cfg, err
	}
	if u.User != nil {
		cfg.Credentials = true
	}
	if cfg.Credentials && !cfg.Insecure && u.Scheme == "http" {
		return cfg, &InsecureError{Type: p.Spec.Type}
	}
	return cfg, nil
}

// readSecret reads one of a Provider's Secrets; the error names it.
func readSecret(ctx context.Context, r client.Reader, namespace, name string) (*corev1.Secret, error) {
	var secret corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %s/%s not found", namespace, name)
		}
		return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	return &secret, nil
}

// errNoToken says that a type needs a token, what kind.token describes:
// ConfigFor's answer for a Provider without a Secret, and New's for a
// Config without a token.
func errNoToken(typ, what string) error {
	return fmt.Errorf("a Provider of type %s needs spec.secretRef with the key %q (%s)", typ, TokenKey, what)
}

// InsecureError is a Provider whose credentials would travel over plain
// http:// without spec.insecure: to its address, or to its proxy (Proxy).
type InsecureError struct {
	Type  string
	Proxy bool
}

func (e *InsecureError) Error() string {
	if e.Proxy {
		return fmt.Sprintf("the %s provider's proxy has credentials (username in spec.proxySecretRef) and a plain http:// address: use an https:// proxy, or set spec.insecure: true to send them unencrypted", e.Type)
	}
	return fmt.Sprintf("the %s provider has credentials (spec.secretRef, or user info in the address) and a plain http:// address: use https://, or set spec.insecure: true to send them unencrypted", e.Type)
}

// checkAddress validates the address without quoting it.
func checkAddress(typ, address string) (*url.URL, error) {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the address is not a valid URL")
	}
	if kinds[typ].nats {
		if u.Scheme != "nats" && u.Scheme != "tls" {
			return nil, fmt.Errorf("a %s provider's address must be a nats:// or tls:// URL, not %s://", typ, u.Scheme)
		}
	} else if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("a %s provider's address must be an http:// or https:// URL, not %s://", typ, u.Scheme)
	}
	return u, nil
}

// LiteralAddress returns the address's host when it is an IP address
// literal, which the AddressPolicy can judge before any delivery.
func LiteralAddress(address string) (netip.Addr, bool) {
	u, err := url.Parse(address)
	if err != nil {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(u.Hostname())
	return ip, err == nil
}
