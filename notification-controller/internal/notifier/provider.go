package notifier

import (
	"context"
	"fmt"
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
		Type:     p.Spec.Type,
		Address:  p.Spec.Address,
		Channel:  p.Spec.Channel,
		Username: p.Spec.Username,
	}
	if ref := p.Spec.SecretRef; ref != nil {
		var secret corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, &secret); err != nil {
			if apierrors.IsNotFound(err) {
				return cfg, fmt.Errorf("secret %s/%s not found", p.Namespace, ref.Name)
			}
			return cfg, fmt.Errorf("reading secret %s/%s: %w", p.Namespace, ref.Name, err)
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
		if p.Spec.Type == notificationv1.GenericHMACProvider && cfg.Token == "" {
			return cfg, fmt.Errorf("secret %s/%s has no key %q (the HMAC signing key)", p.Namespace, ref.Name, TokenKey)
		}
		if cfg.Address == "" {
			return cfg, fmt.Errorf("secret %s/%s has no key %q and spec.address is empty", p.Namespace, ref.Name, AddressKey)
		}
	}
	if p.Spec.Type == notificationv1.GenericHMACProvider && cfg.Token == "" {
		return cfg, fmt.Errorf("a generic-hmac provider needs spec.secretRef with the key %q", TokenKey)
	}
	if cfg.Address == "" {
		return cfg, fmt.Errorf("no address: set spec.address or the key %q in spec.secretRef", AddressKey)
	}
	if err := checkAddress(p.Spec.Type, cfg.Address); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkAddress validates the address without quoting it.
func checkAddress(typ, address string) error {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the address is not a valid URL")
	}
	switch typ {
	case notificationv1.NATSProvider:
		if u.Scheme != "nats" && u.Scheme != "tls" {
			return fmt.Errorf("a nats provider's address must be a nats:// or tls:// URL, not %s://", u.Scheme)
		}
	default:
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("a %s provider's address must be an http:// or https:// URL, not %s://", typ, u.Scheme)
		}
	}
	return nil
}
