package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

	keys keySet
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
	key, err := t.keys.key(ctx, t.now(), tok.Headers[0].KeyID, func(ctx context.Context) (map[string]jose.JSONWebKey, error) {
		return fetchJWKS(ctx, t.Client, t.JWKSURL)
	})
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
