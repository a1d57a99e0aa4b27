package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"plumb.dev/pkg/netguard"
)

// keySet caches one issuer's public signing keys by key id, within the
// bounds above: gcr's Google keys (IDTokens) and each generic-oidc
// issuer's (OIDCTokens).
type keySet struct {
	mu      sync.Mutex
	keys    map[string]jose.JSONWebKey
	fetched time.Time // when keys were last fetched
	tried   time.Time // when a fetch was last tried
}

// key returns the key kid, calling fetch for the set when it is not cached
// or the cache is older than keysMaxAge, and at most once per
// keysMinRefresh. A fetch that fails keeps the keys cached before.
func (s *keySet) key(ctx context.Context, now time.Time, kid string, fetch func(context.Context) (map[string]jose.JSONWebKey, error)) (jose.JSONWebKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[kid]
	if ok && now.Sub(s.fetched) <= keysMaxAge {
		return k, nil
	}
	if !s.tried.IsZero() && now.Sub(s.tried) < keysMinRefresh {
		if ok {
			return k, nil // stale, but fetched again only once per keysMinRefresh
		}
		return jose.JSONWebKey{}, errors.New("the ID token is signed with a key the issuer does not publish")
	}
	s.tried = now
	// Not the caller's context: a webhook call that hangs up must not
	// cancel the fetch, or a caller naming an unknown key id and
	// leaving at once would keep the keys from being refreshed at all.
	keys, err := fetch(context.WithoutCancel(ctx))
	if err != nil {
		if ok {
			return k, nil // a stale key beats none while the issuer is unreachable
		}
		return jose.JSONWebKey{}, fmt.Errorf("fetching the issuer's keys: %w", err)
	}
	s.keys, s.fetched = keys, now
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return jose.JSONWebKey{}, errors.New("the ID token is signed with a key the issuer does not publish")
}

// fetchJWKS reads the key set at url: at most maxJWKSBytes, at most
// maxKeys public signing keys with a key id.
func fetchJWKS(ctx context.Context, client *http.Client, url string) (map[string]jose.JSONWebKey, error) {
	b, err := getBounded(ctx, client, url, "JWKS", maxJWKSBytes)
	if err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, errors.New("the JWKS is not a JSON Web Key Set")
	}
	keys := map[string]jose.JSONWebKey{}
	for _, k := range set.Keys {
		if k.KeyID == "" || !k.IsPublic() || !k.Valid() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if len(keys) == maxKeys {
			return nil, fmt.Errorf("the JWKS holds more than %d keys", maxKeys)
		}
		keys[k.KeyID] = k
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no public signing key")
	}
	return keys, nil
}

// getBounded GETs url as JSON within 10 seconds and reads at most limit
// bytes of a 200 answer. what names the document in errors.
func getBounded(ctx context.Context, client *http.Client, url, what string, limit int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("the %s URL is not valid", what)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		// The egress policy's refusal says which flag allows the
		// address; other errors could name internal hosts, so they are
		// only summed up.
		var refused *netguard.RefusedAddressError
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("the %s endpoint is refused: %v", what, refused)
		}
		return nil, fmt.Errorf("the %s endpoint is unreachable", what)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the %s endpoint answered %d", what, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading the %s failed", what)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("the %s is larger than %d bytes", what, limit)
	}
	return b, nil
}
