package registry

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// dockerConfig is the part of a .dockerconfigjson read here.
type dockerConfig struct {
	Auths map[string]struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	} `json:"auths"`
}

// authFor returns the credentials of host in a .dockerconfigjson, or
// anonymous access when it has no entry for host. Entries may be written
// as a bare host or as a URL (https://host/v1/), as docker login writes
// them.
func authFor(b []byte, host string) (authn.Authenticator, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, errorf(AuthFailed, "the .dockerconfigjson of spec.secretRef is not valid JSON: %v", err)
	}
	for key, e := range cfg.Auths {
		if registryHost(key) != host {
			continue
		}
		user, pass := e.Username, e.Password
		if e.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, errorf(AuthFailed, "the auth of %s in spec.secretRef is not base64", key)
			}
			var ok bool
			if user, pass, ok = strings.Cut(string(dec), ":"); !ok {
				return nil, errorf(AuthFailed, "the auth of %s in spec.secretRef is not <user>:<password>", key)
			}
		}
		return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), nil
	}
	return authn.Anonymous, nil
}

func registryHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	if host == "docker.io" || host == "index.docker.io" {
		return name.DefaultRegistry
	}
	return host
}

// TLSConfig builds the HTTPS configuration of spec.certSecretRef's data:
// ca.crt a CA to trust besides the system's, tls.crt and tls.key a client
// certificate (Flux's keys). nil when the Secret holds none of them.
func TLSConfig(data map[string][]byte) (*tls.Config, error) {
	ca, cert, key := data["ca.crt"], data["tls.crt"], data["tls.key"]
	if len(ca) == 0 && len(cert) == 0 && len(key) == 0 {
		return nil, errorf(AuthFailed, "spec.certSecretRef holds none of ca.crt, tls.crt and tls.key")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errorf(AuthFailed, "the ca.crt of spec.certSecretRef holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, errorf(AuthFailed, "the tls.crt and tls.key of spec.certSecretRef: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
