package githubapp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestTokensAreReusedUntilFiveMinutesBeforeTheyExpire(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var minted atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := jwt.Parse(bearer, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("7"), jwt.WithoutClaimsValidation()); err != nil ||
			r.URL.Path != "/api/v3/app/installations/9/access_tokens" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		n := minted.Add(1)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"t%d","expires_at":%q}`, n, t0.Add(time.Hour).Format(time.RFC3339))
	}))
	defer api.Close()
	app, err := FromSecret(map[string][]byte{
		AppIDKey: []byte("7"), InstallationIDKey: []byte("9"), BaseURLKey: []byte(api.URL + "/api/v3/"),
		PrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	})
	if err != nil {
		t.Fatal(err)
	}
	client := api.Client()
	now := t0
	tokens := &Tokens{Now: func() time.Time { return now }}
	for _, step := range []struct {
		at   time.Duration
		want string
	}{{0, "t1"}, {54 * time.Minute, "t1"}, {56 * time.Minute, "t2"}} {
		now = t0.Add(step.at)
		got, err := tokens.Token(context.Background(), app, client)
		if err != nil || got != step.want {
			t.Fatalf("at +%s: got %q, %v; want %q", step.at, got, err, step.want)
		}
	}
	// The caller's client carries the call: one that refuses every
	// address (the caller's egress policy) reaches nothing.
	refusing := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("address refused")
	})}
	if _, err := (&Tokens{}).Token(context.Background(), app, refusing); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v, want the address refused", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Login is the App's slug with GitHub's [bot] suffix, asked once with the
// App's JWT.
func TestLoginIsTheAppsSlugAsABot(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := jwt.Parse(bearer, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("7")); err != nil || r.Method != http.MethodGet || r.URL.Path != "/app" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		asked.Add(1)
		fmt.Fprint(w, `{"id":7,"slug":"plumb-notifier","name":"Plumb notifier"}`)
	}))
	defer api.Close()
	app, err := FromSecret(map[string][]byte{
		AppIDKey: []byte("7"), InstallationIDKey: []byte("9"), BaseURLKey: []byte(api.URL),
		PrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens := &Tokens{}
	for range 2 {
		login, err := tokens.Login(context.Background(), app, api.Client())
		if err != nil || login != "plumb-notifier[bot]" {
			t.Fatalf("Login = %q, %v; want plumb-notifier[bot]", login, err)
		}
	}
	if asked.Load() != 1 {
		t.Fatalf("GET /app asked %d times, want once", asked.Load())
	}
}
