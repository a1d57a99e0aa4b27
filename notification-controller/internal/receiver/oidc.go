package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/celexpr"
)

// Bounds of generic-oidc verification besides the key cache's.
const (
	// maxDiscoveryBytes bounds an issuer's discovery document.
	maxDiscoveryBytes = 64 << 10
	// maxIssuers bounds the issuers whose keys are cached; they come
	// from Receivers, never from a call.
	maxIssuers = 64
	// claimsTimeout bounds the evaluation of one provider's variables
	// and validations.
	claimsTimeout = 5 * time.Second
)

// oidcAlgorithms are the signatures a generic-oidc ID token may carry:
// the asymmetric ones OIDC issuers use (never HMAC, nor none).
var oidcAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// OIDCTokens verifies the ID tokens of generic-oidc calls against the
// issuers a Receiver lists in spec.oidcProviders. Each issuer's keys are
// found by OIDC discovery and cached like IDTokens' (keySet), per issuer,
// for at most maxIssuers issuers.
type OIDCTokens struct {
	// Client fetches discovery documents and keys: the issuer is the
	// Receiver author's choice, so it dials under the egress policy,
	// follows no redirect and has a timeout (NewOIDCTokens' caller
	// builds it).
	Client *http.Client
	// Now is the time tokens are checked and keys cached at; time.Now
	// when nil.
	Now func() time.Time

	mu      sync.Mutex
	issuers map[string]*keySet
}

// NewOIDCTokens returns a verifier whose fetches go through client.
func NewOIDCTokens(client *http.Client) *OIDCTokens {
	return &OIDCTokens{Client: client}
}

func (o *OIDCTokens) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// keysOf returns the key cache of issuer, dropping another issuer's when
// maxIssuers are cached (its keys are fetched again when next needed).
func (o *OIDCTokens) keysOf(issuer string) *keySet {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.issuers[issuer]; ok {
		return s
	}
	if o.issuers == nil {
		o.issuers = map[string]*keySet{}
	}
	if len(o.issuers) >= maxIssuers {
		for k := range o.issuers {
			delete(o.issuers, k)
			break
		}
	}
	s := &keySet{}
	o.issuers[issuer] = s
	return s
}

// Verify checks raw is an ID token issued by one of providers (the one
// whose issuerURL is its iss), signed with a key the issuer publishes,
// for the provider's audience, within its lifetime (clockLeeway either
// side), and that the provider's validations all give true. It returns
// the token's claims. The error names what failed, never the token.
func (o *OIDCTokens) Verify(ctx context.Context, raw string, providers []notificationv1.OIDCProvider) (map[string]any, error) {
	if len(raw) > maxIDToken {
		return nil, fmt.Errorf("the ID token is longer than %d bytes", maxIDToken)
	}
	tok, err := jwt.ParseSigned(raw, oidcAlgorithms)
	if err != nil {
		return nil, errors.New("the bearer token is not a JWT signed with RS, PS, ES or EdDSA")
	}
	if len(tok.Headers) != 1 || tok.Headers[0].KeyID == "" {
		return nil, errors.New("the ID token names no signing key (kid)")
	}
	// The issuer is read before the signature is checked only to pick
	// the provider; it is checked again once the signature is.
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, errors.New("the ID token's claims are not JSON")
	}
	var p *notificationv1.OIDCProvider
	for i := range providers {
		if providers[i].IssuerURL == unverified.Issuer {
			p = &providers[i]
			break
		}
	}
	if p == nil {
		return nil, fmt.Errorf("the ID token's issuer %q is not in spec.oidcProviders", truncate(unverified.Issuer, 128))
	}
	now := o.now()
	key, err := o.keysOf(p.IssuerURL).key(ctx, now, tok.Headers[0].KeyID, func(ctx context.Context) (map[string]jose.JSONWebKey, error) {
		jwksURL, err := discover(ctx, o.Client, p.IssuerURL)
		if err != nil {
			return nil, err
		}
		return fetchJWKS(ctx, o.Client, jwksURL)
	})
	if err != nil {
		return nil, err
	}
	if key.Algorithm != "" && key.Algorithm != tok.Headers[0].Algorithm {
		return nil, fmt.Errorf("the ID token is signed with %s, its key is for %s", tok.Headers[0].Algorithm, key.Algorithm)
	}
	var std jwt.Claims
	claims := map[string]any{}
	if err := tok.Claims(key.Key, &std, &claims); err != nil {
		return nil, errors.New("the ID token's signature does not verify with the issuer's key")
	}
	if std.Issuer != p.IssuerURL {
		return nil, fmt.Errorf("the ID token's issuer is %q, want %q", truncate(std.Issuer, 128), p.IssuerURL)
	}
	if std.Expiry == nil {
		return nil, errors.New("the ID token has no expiry")
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{p.GetAudience()}, Time: now}, clockLeeway); {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, fmt.Errorf("the ID token is not for audience %q", truncate(p.GetAudience(), 128))
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("the ID token has expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("the ID token is not valid yet")
	case err != nil:
		return nil, fmt.Errorf("the ID token is not valid: %v", err)
	}
	rules, err := compileOIDCProvider(p)
	if err != nil {
		return nil, err // the reconciler refuses such a Receiver
	}
	ctx, cancel := context.WithTimeout(ctx, claimsTimeout)
	defer cancel()
	if err := rules.evaluate(ctx, claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// discover reads the issuer's discovery document and returns its
// jwks_uri. Its issuer must be issuerURL, as OIDC discovery requires:
// a document served for another issuer is refused.
func discover(ctx context.Context, client *http.Client, issuerURL string) (string, error) {
	b, err := getBounded(ctx, client, strings.TrimSuffix(issuerURL, "/")+"/.well-known/openid-configuration", "discovery", maxDiscoveryBytes)
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", errors.New("the discovery document is not JSON")
	}
	if doc.Issuer != issuerURL {
		return "", fmt.Errorf("the discovery document is for issuer %q, not %q", truncate(doc.Issuer, 128), issuerURL)
	}
	u, err := url.Parse(doc.JWKSURI)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("the discovery document's jwks_uri is not an http(s) URL")
	}
	return doc.JWKSURI, nil
}

// oidcRules are a provider's compiled variables and validations.
type oidcRules struct {
	variables   []namedProgram
	validations []namedProgram // name is the message
}

type namedProgram struct {
	name string
	prog *celexpr.Program
}

// claimsVars are the variables of a provider's expressions.
var claimsVars = []string{"claims", "vars"}

// compileOIDCProvider compiles a provider's expressions (celexpr caches
// them, so a call compiles nothing new).
func compileOIDCProvider(p *notificationv1.OIDCProvider) (*oidcRules, error) {
	var r oidcRules
	for _, v := range p.Variables {
		prog, err := celexpr.Compile(v.Expression, celexpr.Any, claimsVars...)
		if err != nil {
			return nil, fmt.Errorf("variable %q: %w", v.Name, err)
		}
		r.variables = append(r.variables, namedProgram{v.Name, prog})
	}
	for _, v := range p.Validations {
		prog, err := celexpr.Compile(v.Expression, celexpr.Bool, claimsVars...)
		if err != nil {
			return nil, fmt.Errorf("validation %q: %w", v.Message, err)
		}
		r.validations = append(r.validations, namedProgram{v.Message, prog})
	}
	return &r, nil
}

// evaluate sets the variables in order, then runs every validation; the
// error joins the messages of those that gave false.
func (r *oidcRules) evaluate(ctx context.Context, claims map[string]any) error {
	vars := map[string]any{}
	act := map[string]any{"claims": claims, "vars": vars}
	for _, v := range r.variables {
		val, err := v.prog.Value(ctx, act)
		if err != nil {
			return fmt.Errorf("variable %q: %v", v.name, err)
		}
		vars[v.name] = val
	}
	var failed []string
	for _, v := range r.validations {
		ok, err := v.prog.Bool(ctx, act)
		if err != nil {
			return fmt.Errorf("validation %q: %v", v.name, err)
		}
		if !ok {
			failed = append(failed, v.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the ID token fails spec.oidcProviders validations: %s", strings.Join(failed, "; "))
	}
	return nil
}

// issuerURLPattern is the CRD's pattern of issuerURL.
var issuerURLPattern = regexp.MustCompile(`^https?://`)

// CheckOIDC checks what the CRD checks of a Receiver's secretRef and
// oidcProviders (objects stored before a rule, or applied with
// validation off), and compiles every expression of the providers. The
// reconciler refuses the Receiver with its error.
func CheckOIDC(rcv *notificationv1.Receiver) error {
	oidc := rcv.Spec.Type == notificationv1.GenericOIDCReceiver
	switch {
	case oidc && len(rcv.Spec.OIDCProviders) == 0:
		return errors.New("a generic-oidc receiver needs at least one spec.oidcProviders entry")
	case !oidc && len(rcv.Spec.OIDCProviders) > 0:
		return errors.New("spec.oidcProviders is read only for type generic-oidc")
	case oidc && rcv.Spec.SecretRef != nil:
		return errors.New("a generic-oidc receiver authenticates calls by their ID token: remove spec.secretRef")
	case !oidc && rcv.Spec.SecretRef == nil:
		return errors.New("spec.secretRef is required for every type but generic-oidc")
	}
	seen := map[string]bool{}
	for i := range rcv.Spec.OIDCProviders {
		p := &rcv.Spec.OIDCProviders[i]
		if !issuerURLPattern.MatchString(p.IssuerURL) {
			return fmt.Errorf("spec.oidcProviders[%d].issuerURL %q is not an http(s) URL", i, p.IssuerURL)
		}
		if seen[p.IssuerURL] {
			return fmt.Errorf("spec.oidcProviders[%d]: issuer %q is listed twice", i, p.IssuerURL)
		}
		seen[p.IssuerURL] = true
		if len(p.Validations) == 0 {
			return fmt.Errorf("spec.oidcProviders[%d]: at least one validation is required, or anyone the issuer signs tokens for could call", i)
		}
		if _, err := compileOIDCProvider(p); err != nil {
			return fmt.Errorf("spec.oidcProviders[%d]: %w", i, err)
		}
	}
	return nil
}

// verifyGenericOIDC checks a generic-oidc call's bearer ID token against
// the Receiver's providers; the body may be anything, as in Flux.
func (v *Verifier) verifyGenericOIDC(ctx context.Context, c Call) (Verdict, error) {
	if v.OIDC == nil {
		return Verdict{}, fmt.Errorf("%w: generic-oidc calls cannot be verified: no OIDC verifier is configured", ErrUnauthorized)
	}
	bearer, ok := strings.CutPrefix(c.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(bearer) == "" {
		return Verdict{}, fmt.Errorf("%w: no Authorization: Bearer ID token", ErrUnauthorized)
	}
	claims, err := v.OIDC.Verify(ctx, strings.TrimSpace(bearer), c.OIDCProviders)
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: %v", ErrUnauthorized, err)
	}
	return Verdict{Trigger: true, Claims: claims}, nil
}
