package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Bounds of the key cache: a JWKS answer larger than maxJWKSBytes or with
// more than maxKeys keys is refused; keys are fetched again after
// keysMaxAge, and a token signed with a key not in the cache fetches them
// again at most once per keysMinRefresh (a forger choosing key ids cannot
// make every call a fetch).
const (
	maxJWKSBytes   = 256 << 10
	maxKeys        = 32
	maxIDToken     = 16 << 10
	keysMaxAge     = time.Hour
	keysMinRefresh = time.Minute
	clockLeeway    = time.Minute
)

// IDTokens verifies OpenID Connect ID tokens (RS256 JWTs) signed by one
// issuer (--gcr-oidc-issuer, Google's by default) with the keys published at JWKSURL, cached.
type IDTokens struct {
	// Issuer is the iss the tokens must carry; it is also accepted without
	// its https:// scheme, as Google writes it in some tokens.
	Issuer string
	// JWKSURL serves the issuer's public keys (a JSON Web Key Set,
	// --gcr-jwks-url).
	JWKSURL string
	// Client fetches the keys; it must have a timeout.
	Client *http.Client
	// Now is the time tokens are checked and keys cached at; time.Now
	// when nil.
	Now func() time.Time

	mu      sync.Mutex
	keys    map[string]jose.JSONWebKey
	fetched time.Time // when keys were last fetched
	tried   time.Time // when a fetch was last tried
}

// NewIDTokens returns a verifier for the issuer's tokens whose keys are
// fetched from jwksURL with a client bounded in time and that follows no
// redirect.
func NewIDTokens(issuer, jwksURL string) *IDTokens {
	return &IDTokens{Issuer: issuer, JWKSURL: jwksURL, Client: &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// idClaims are the claims of a Google ID token that are checked besides
// the registered ones.
type idClaims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
}

// Verify checks raw is a token signed by one of the issuer's keys, issued
// by the issuer for audience, not expired, and for the verified email. The
// error names the claim that failed, never the token.
func (t *IDTokens) Verify(ctx context.Context, raw, audience, email string) error {
	if len(raw) > maxIDToken {
		return fmt.Errorf("the ID token is longer than %d bytes", maxIDToken)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return errors.New("the bearer token is not an RS256-signed JWT")
	}
	if len(tok.Headers) != 1 || tok.Headers[0].KeyID == "" {
		return errors.New("the ID token names no signing key (kid)")
	}
	key, err := t.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return err
	}
	var std jwt.Claims
	var extra idClaims
	if err := tok.Claims(key.Key, &std, &extra); err != nil {
		return errors.New("the ID token's signature does not verify with the issuer's key")
	}
	if std.Expiry == nil {
		return errors.New("the ID token has no expiry")
	}
	if std.Issuer != t.Issuer && std.Issuer != strings.TrimPrefix(t.Issuer, "https://") {
		return fmt.Errorf("the ID token's issuer is %q, want %q", truncate(std.Issuer, 128), t.Issuer)
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{audience}, Time: t.now()}, clockLeeway); {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return errors.New("the ID token is for another audience than the Secret's audience")
	case errors.Is(err, jwt.ErrExpired):
		return errors.New("the ID token has expired")
	case err != nil:
		return fmt.Errorf("the ID token is not valid: %v", err)
	}
	if extra.Email != email {
		return errors.New("the ID token is for another service account than the Secret's email")
	}
	if !extra.EmailVerified {
		return errors.New("the ID token's email is not verified")
	}
	return nil
}

func (t *IDTokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// key returns the issuer's key kid, fetching the key set when it is not
// cached or the cache is older than keysMaxAge. A fetch that fails keeps
// the keys cached before.
func (t *IDTokens) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.keys[kid]
	if ok && t.now().Sub(t.fetched) <= keysMaxAge {
		return k, nil
	}
	if !t.tried.IsZero() && t.now().Sub(t.tried) < keysMinRefresh {
		if ok {
			return k, nil // stale, but fetched again only once per keysMinRefresh
		}
		return jose.JSONWebKey{}, errors.New("the ID token is signed with a key the issuer does not publish")
	}
	t.tried = t.now()
	// Not the caller's context: a webhook call that hangs up must not
	// cancel the fetch, or a caller naming an unknown key id and
	// leaving at once would keep the keys from being refreshed at all.
	keys, err := t.fetch(context.WithoutCancel(ctx))
	if err != nil {
		if ok {
			return k, nil // a stale key beats none while the issuer is unreachable
		}
		return jose.JSONWebKey{}, fmt.Errorf("fetching the issuer's keys: %w", err)
	}
	t.keys, t.fetched = keys, t.now()
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return jose.JSONWebKey{}, errors.New("the ID token is signed with a key the issuer does not publish")
}

// fetch reads the key set at JWKSURL: at most maxJWKSBytes, at most
// maxKeys public signing keys with a key id.
func (t *IDTokens) fetch(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.JWKSURL, nil)
	if err != nil {
		return nil, errors.New("the JWKS URL is not valid")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.Client.Do(req)
	if err != nil {
		return nil, errors.New("the JWKS endpoint is unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the JWKS endpoint answered %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, errors.New("reading the JWKS failed")
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("the JWKS is larger than %d bytes", maxJWKSBytes)
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
