package githubapp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"plumb.dev/source-controller/internal/egress"
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
	policy := egress.Policy([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	now := t0
	tokens := &Tokens{Now: func() time.Time { return now }}
	for _, step := range []struct {
		at   time.Duration
		want string
	}{{0, "t1"}, {54 * time.Minute, "t1"}, {56 * time.Minute, "t2"}} {
		now = t0.Add(step.at)
		got, err := tokens.Token(context.Background(), app, policy)
		if err != nil || got != step.want {
			t.Fatalf("at +%s: got %q, %v; want %q", step.at, got, err, step.want)
		}
	}
	// The API on a refused address is not called.
	if _, err := (&Tokens{}).Token(context.Background(), app, egress.Policy(nil)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v, want the address refused", err)
	}
}
