package githubapp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Keys of the Secret, as in Flux.
const (
	AppIDKey             = "githubAppID"
	InstallationIDKey    = "githubAppInstallationID"
	InstallationOwnerKey = "githubAppInstallationOwner"
	PrivateKeyKey        = "githubAppPrivateKey"
	BaseURLKey           = "githubAppBaseURL"
)

// DefaultBaseURL is GitHub's API.
const DefaultBaseURL = "https://api.github.com"

// TokenUsername is the user name GitHub expects with an installation token
// over HTTPS.
const TokenUsername = "x-access-token"

// MaxResponseBytes bounds the API's answer read.
const MaxResponseBytes = 64 << 10

// refreshBefore is how long before its expiry a cached token is replaced.
const refreshBefore = 5 * time.Minute

// App is what the Secret says.
type App struct {
	AppID          int64
	InstallationID int64
	PrivateKey     []byte
	BaseURL        string
}

// FromSecret reads an App from a Secret's data.
func FromSecret(data map[string][]byte) (App, error) {
	var a App
	id, err := strconv.ParseInt(strings.TrimSpace(string(data[AppIDKey])), 10, 64)
	if err != nil || id <= 0 {
		return a, fmt.Errorf("%s must be the GitHub App's numeric ID", AppIDKey)
	}
	a.AppID = id
	raw := strings.TrimSpace(string(data[InstallationIDKey]))
	if raw == "" && len(data[InstallationOwnerKey]) > 0 {
		return a, fmt.Errorf("%s is not supported; set %s to the installation's numeric ID", InstallationOwnerKey, InstallationIDKey)
	}
	inst, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || inst <= 0 {
		return a, fmt.Errorf("%s must be the installation's numeric ID", InstallationIDKey)
	}
	a.InstallationID = inst
	a.PrivateKey = data[PrivateKeyKey]
	if len(a.PrivateKey) == 0 {
		return a, fmt.Errorf("%s (the GitHub App's private key, PEM) is missing", PrivateKeyKey)
	}
	a.BaseURL = strings.TrimSuffix(strings.TrimSpace(string(data[BaseURLKey])), "/")
	if a.BaseURL == "" {
		a.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(a.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return a, fmt.Errorf("%s %q is not an http:// or https:// URL", BaseURLKey, a.BaseURL)
	}
	return a, nil
}

type cached struct {
	token   string
	expires time.Time
}

// Tokens mints and caches installation tokens. The zero value is ready;
// Now, when set, is the clock (tests).
type Tokens struct {
	Now func() time.Time

	mu     sync.Mutex
	cache  map[[32]byte]cached
	logins map[[32]byte]string
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// key identifies an App's installation; the private key is in it so that
// a rotated key mints a fresh token.
func (a App) key() [32]byte {
	return sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%s", a.BaseURL, a.AppID, a.InstallationID, a.PrivateKey)))
}

// Token returns an installation token of a, cached or minted through
// client (the caller's egress: its address policy, proxy and TLS).
func (t *Tokens) Token(ctx context.Context, a App, client *http.Client) (string, error) {
	k := a.key()
	now := t.now()
	t.mu.Lock()
	c, ok := t.cache[k]
	t.mu.Unlock()
	if ok && now.Before(c.expires.Add(-refreshBefore)) {
		return c.token, nil
	}
	token, expires, err := mint(ctx, a, client, now)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = map[[32]byte]cached{}
	}
	for key, c := range t.cache {
		if !now.Before(c.expires) {
			delete(t.cache, key)
		}
	}
	t.cache[k] = cached{token: token, expires: expires}
	return token, nil
}

// mint asks the API for a token.
func mint(ctx context.Context, a App, client *http.Client, now time.Time) (string, time.Time, error) {
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	endpoint := fmt.Sprintf("%s/app/installations/%d/access_tokens", a.BaseURL, a.InstallationID)
	if err := a.call(ctx, client, now, http.MethodPost, endpoint, http.StatusCreated, &out); err != nil {
		return "", time.Time{}, fmt.Errorf("minting a GitHub App installation token: %w", err)
	}
	if out.Token == "" {
		return "", time.Time{}, errors.New("minting a GitHub App installation token: the answer holds no token")
	}
	return out.Token, out.ExpiresAt, nil
}

// Login returns the user name GitHub gives what the App writes (a
// comment's author): "<the App's slug>[bot]", from GET /app. It does not
// change while the App exists, so it is asked once per App.
func (t *Tokens) Login(ctx context.Context, a App, client *http.Client) (string, error) {
	k := a.key()
	t.mu.Lock()
	login, ok := t.logins[k]
	t.mu.Unlock()
	if ok {
		return login, nil
	}
	var out struct {
		Slug string `json:"slug"`
	}
	if err := a.call(ctx, client, t.now(), http.MethodGet, a.BaseURL+"/app", http.StatusOK, &out); err != nil {
		return "", fmt.Errorf("reading the GitHub App's name: %w", err)
	}
	if out.Slug == "" {
		return "", errors.New("reading the GitHub App's name: the answer holds no slug")
	}
	login = out.Slug + "[bot]"
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.logins == nil {
		t.logins = map[[32]byte]string{}
	}
	t.logins[k] = login
	return login, nil
}

// call makes a request of the App itself (authenticated by a JWT the
// private key signs: iss the App ID, iat a minute in the past against
// clock skew, exp nine minutes ahead, under GitHub's ten) and decodes an
// answer of status want into out, reading at most MaxResponseBytes.
func (a App) call(ctx context.Context, client *http.Client, now time.Time, method, endpoint string, want int, out any) error {
	key, err := jwt.ParseRSAPrivateKeyFromPEM(a.PrivateKey)
	if err != nil {
		return fmt.Errorf("%s is not a PEM RSA private key: %v", PrivateKeyKey, err)
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.AppID, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}).SignedString(key)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return &RefusedError{Status: resp.Status, Code: resp.StatusCode, Body: string(body)}
	}
	if len(body) > MaxResponseBytes {
		return fmt.Errorf("answer larger than %d bytes", MaxResponseBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return errors.New("the answer is not JSON")
	}
	return nil
}

// RefusedError is the API's refusal of the App (a wrong App ID,
// installation or key); Body is the excerpt of its answer, which a caller
// that must not repeat a host's words (notification-controller) leaves
// out: Code says enough.
type RefusedError struct {
	Status string
	Code   int
	Body   string
}

func (e *RefusedError) Error() string {
	return "the GitHub API refused the App: " + e.Status + ": " + e.Body
}
