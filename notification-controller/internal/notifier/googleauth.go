package notifier

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2/google"
)

// googleTokens gets, and keeps until shortly before it expires, the
// access token of a Google service account's JSON key: OAuth 2.0's JWT
// bearer grant (RFC 7523), an assertion signed with the key posted to the
// key's token_uri. golang.org/x/oauth2/google reads the key, so its fields
// mean what they mean to Google's libraries; the request is ours, through
// Config.do, because oauth2's token source sends with errors that quote
// the answer and drop the cause (a refused address would be retried).
type googleTokens struct {
	email, keyID, tokenURL, scope string
	key                           *rsa.PrivateKey

	mu     sync.Mutex
	token  string
	expiry time.Time
}

// googleTokenLifetime is how long the assertion asks the token to live,
// the longest Google grants.
const googleTokenLifetime = time.Hour

// googleTokenMargin is how long before its expiry a token is replaced: a
// delivery that starts with it must not see it expire.
const googleTokenMargin = time.Minute

// googleTokensByKey keeps the googleTokens of each key and scope for the
// life of the process: the dispatcher rebuilds a Provider's notifier
// every few seconds (configTTL), and a token lives an hour. Keyed by a
// digest, so the map holds no key; bounded, as rotated keys leave theirs
// behind.
var googleTokensByKey = struct {
	sync.Mutex
	m map[[sha256.Size]byte]*googleTokens
}{m: map[[sha256.Size]byte]*googleTokens{}}

const maxGoogleKeys = 64

// googleTokensFor returns the googleTokens of a service account's JSON
// key, shared by every notifier of that key and scope.
func googleTokensFor(typ string, jsonKey []byte, scope string, insecure bool) (*googleTokens, error) {
	id := sha256.Sum256(fmt.Appendf(nil, "%s\x00%t\x00%s", scope, insecure, jsonKey))
	c := &googleTokensByKey
	c.Lock()
	defer c.Unlock()
	if t, ok := c.m[id]; ok {
		return t, nil
	}
	t, err := newGoogleTokens(typ, jsonKey, scope, insecure)
	if err != nil {
		return nil, err
	}
	if len(c.m) >= maxGoogleKeys {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = t
	return t, nil
}

// newGoogleTokens reads a service account's JSON key. Its errors name
// what is wrong with the key, never its content.
func newGoogleTokens(typ string, jsonKey []byte, scope string, insecure bool) (*googleTokens, error) {
	bad := fmt.Errorf("the token of a %s provider must be a Google service account's JSON key", typ)
	conf, err := google.JWTConfigFromJSON(jsonKey, scope)
	if err != nil {
		return nil, bad
	}
	if conf.Email == "" {
		return nil, fmt.Errorf("%w: it has no client_email", bad)
	}
	key, err := rsaKeyOf(conf.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("%w: its private_key is not an RSA key in PEM", bad)
	}
	u, err := url.Parse(conf.TokenURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%w: its token_uri is not an http(s) URL", bad)
	}
	// The assertion is as good as the key for an hour, and the answer is
	// a token: both travel over TLS only, unless spec.insecure says not.
	if u.Scheme == "http" && !insecure {
		return nil, &InsecureError{Type: typ}
	}
	return &googleTokens{email: conf.Email, keyID: conf.PrivateKeyID, tokenURL: conf.TokenURL, scope: scope, key: key}, nil
}

// rsaKeyOf parses a PEM private key, PKCS #8 as Google writes it, or
// PKCS #1.
func rsaKeyOf(pemKey []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemKey)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if key, ok := k.(*rsa.PrivateKey); ok {
			return key, nil
		}
		return nil, errors.New("not an RSA key")
	}
	return x509.ParsePKCS1PrivateKey(block.Bytes)
}

// get returns a valid access token, asking the token endpoint for one
// when the kept one is missing or about to expire.
func (t *googleTokens) get(ctx context.Context, cfg Config) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.token != "" && now.Add(googleTokenMargin).Before(t.expiry) {
		return t.token, nil
	}
	assertion, err := t.assertion(now)
	if err != nil {
		return "", &PermanentError{Err: fmt.Errorf("signing the %s provider's token request: %w", cfg.Type, err)}
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	a, err := cfg.do(ctx, request{
		method: http.MethodPost, url: t.tokenURL, body: []byte(form.Encode()),
		contentType: "application/x-www-form-urlencoded",
	})
	if err != nil {
		return "", err
	}
	// RFC 6749 5.2: a refusal's "error" is a code of a fixed
	// vocabulary (invalid_grant: the key was deleted or the clock is
	// off), worth quoting.
	var answer struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal(a.body, &answer)
	typ := cfg.Type + " token"
	if !a.ok() {
		return "", statusError(typ, a, serviceCode(answer.Error), retryable(a.code))
	}
	if answer.AccessToken == "" || (answer.TokenType != "" && !strings.EqualFold(answer.TokenType, "bearer")) {
		return "", fmt.Errorf("the %s endpoint answered %d without a bearer token", typ, a.code)
	}
	lifetime := time.Duration(answer.ExpiresIn) * time.Second
	if lifetime <= 0 || lifetime > googleTokenLifetime {
		lifetime = googleTokenLifetime
	}
	t.token, t.expiry = answer.AccessToken, now.Add(lifetime)
	return t.token, nil
}

// forget drops token when it is the one kept: Google refused it (revoked
// with its key), so the next delivery asks for another.
func (t *googleTokens) forget(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == token {
		t.token = ""
	}
}

// assertion is the signed JWT of the grant: the service account asks the
// token endpoint (its audience) for a token of scope, RS256 with the
// key's ID, as Google requires.
func (t *googleTokens) assertion(now time.Time) (string, error) {
	header := map[string]string{"alg": "RS256", "typ": "JWT"}
	if t.keyID != "" {
		header["kid"] = t.keyID
	}
	// Issued a little in the past: a token endpoint whose clock is
	// behind ours must not see an assertion from the future.
	iat := now.Add(-10 * time.Second)
	claims := map[string]any{
		"iss": t.email, "scope": t.scope, "aud": t.tokenURL,
		"iat": iat.Unix(), "exp": iat.Add(googleTokenLifetime).Unix(),
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, t.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + enc.EncodeToString(sig), nil
}
