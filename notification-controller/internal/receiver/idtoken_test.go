package receiver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

const (
	testIssuer   = "https://accounts.google.com"
	testAudience = "https://hooks.example.com/hook/0123"
	testEmail    = "pubsub-push@my-project.iam.gserviceaccount.com"
)

var (
	keysOnce        sync.Once
	googleKey, evil *rsa.PrivateKey
)

// testKeys returns the stand-in issuer's key and another one, generated
// once for the package's tests.
func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	keysOnce.Do(func() {
		var err error
		if googleKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if evil, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	})
	return googleKey, evil
}

// jwksServer stands in for https://www.googleapis.com/oauth2/v3/certs,
// publishing key under kid "k1", and counts its calls.
func jwksServer(t *testing.T, key *rsa.PrivateKey) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// idToken is a Pub/Sub push token as Google signs it; change edits its
// claims before signing.
func idToken(t *testing.T, key *rsa.PrivateKey, kid string, change func(c *jwt.Claims, extra map[string]any)) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := jwt.Claims{
		Issuer: testIssuer, Subject: "112233445566778899", Audience: jwt.Audience{testAudience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
	}
	extra := map[string]any{"email": testEmail, "email_verified": true, "azp": "112233445566778899"}
	if change != nil {
		change(&c, extra)
	}
	raw, err := jwt.Signed(signer).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func gcrCall(v *Verifier, bearer, body string) (Verdict, error) {
	return v.Verify(context.Background(), Call{
		Type:   notificationv1.GCRReceiver,
		Secret: Credentials{Token: token, Email: testEmail, Audience: testAudience},
		Header: headers("Authorization", "Bearer "+bearer, "Content-Type", "application/json"),
		Body:   []byte(body),
	})
}

func TestGCRAcceptsAGoogleSignedPush(t *testing.T) {
	g := NewWithT(t)
	key, _ := testKeys(t)
	srv, _ := jwksServer(t, key)
	v := &Verifier{IDTokens: NewIDTokens(testIssuer, srv.URL)}
	verdict, err := gcrCall(v, idToken(t, key, "k1", nil), pubsubBody(`{"action":"INSERT","digest":"gcr.io/my-project/app@sha256:6ec128e26cd5","tag":"gcr.io/my-project/app:v1"}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(verdict).To(Equal(Verdict{Trigger: true, Event: "INSERT"}))

	// The issuer without its scheme, as some Google tokens carry it.
	_, err = gcrCall(v, idToken(t, key, "k1", func(c *jwt.Claims, _ map[string]any) { c.Issuer = "accounts.google.com" }), pubsubBody(`{"action":"DELETE","tag":"gcr.io/p/app:v1"}`))
	g.Expect(err).NotTo(HaveOccurred())
}

func TestGCRRefusesTokensGoogleDidNotIssueForThisReceiver(t *testing.T) {
	key, other := testKeys(t)
	srv, _ := jwksServer(t, key)
	v := &Verifier{IDTokens: NewIDTokens(testIssuer, srv.URL)}
	body := pubsubBody(`{"action":"INSERT","tag":"gcr.io/p/app:v1"}`)
	hs256, err := jwt.Signed(mustSigner(t, jose.HS256, []byte(strings.Repeat("k", 32)))).Claims(jwt.Claims{Issuer: testIssuer, Audience: jwt.Audience{testAudience}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		bearer string
		reason string
	}{
		"expired": {idToken(t, key, "k1", func(c *jwt.Claims, _ map[string]any) {
			c.IssuedAt, c.Expiry = jwt.NewNumericDate(time.Now().Add(-3*time.Hour)), jwt.NewNumericDate(time.Now().Add(-2*time.Hour))
		}), "expired"},
		"no expiry":        {idToken(t, key, "k1", func(c *jwt.Claims, _ map[string]any) { c.Expiry = nil }), "no expiry"},
		"wrong audience":   {idToken(t, key, "k1", func(c *jwt.Claims, _ map[string]any) { c.Audience = jwt.Audience{"https://elsewhere.example.com"} }), "audience"},
		"wrong issuer":     {idToken(t, key, "k1", func(c *jwt.Claims, _ map[string]any) { c.Issuer = "https://issuer.example.com" }), "issuer"},
		"wrong key":        {idToken(t, other, "k1", nil), "signature"},
		"unknown key id":   {idToken(t, other, "k2", nil), "does not publish"},
		"other account":    {idToken(t, key, "k1", func(_ *jwt.Claims, e map[string]any) { e["email"] = "someone@evil.example.com" }), "service account"},
		"email unverified": {idToken(t, key, "k1", func(_ *jwt.Claims, e map[string]any) { e["email_verified"] = false }), "not verified"},
		"HS256":            {hs256, "RS256"},
		"not a JWT":        {"not-a-token", "RS256"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := gcrCall(v, tc.bearer, body)
			g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.reason))
			g.Expect(err.Error()).NotTo(ContainSubstring(tc.bearer))
		})
	}
	t.Run("no bearer", func(t *testing.T) {
		g := NewWithT(t)
		_, err := v.Verify(context.Background(), Call{Type: notificationv1.GCRReceiver, Header: headers(), Body: []byte(body)})
		g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
	})
}

func mustSigner(t *testing.T, alg jose.SignatureAlgorithm, key any) jose.Signer {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGCRRefusesAValidTokenWithABodyThatIsNotARegistryMessage(t *testing.T) {
	key, _ := testKeys(t)
	srv, _ := jwksServer(t, key)
	v := &Verifier{IDTokens: NewIDTokens(testIssuer, srv.URL)}
	for name, body := range map[string]string{
		"no message":          `{"subscription":"projects/p/subscriptions/s"}`,
		"data not base64":     `{"message":{"data":"%%%","messageId":"1"}}`,
		"data not JSON":       pubsubBody(`INSERT gcr.io/p/app:v1`),
		"data without action": pubsubBody(`{"tag":"gcr.io/p/app:v1"}`),
		"data without image":  pubsubBody(`{"action":"INSERT"}`),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := gcrCall(v, idToken(t, key, "k1", nil), body)
			g.Expect(errors.Is(err, ErrPayload)).To(BeTrue(), "error: %v", err)
		})
	}
}

// A forger choosing key ids cannot make every call a fetch of the keys:
// an unknown kid fetches them again at most once per keysMinRefresh.
func TestIDTokenKeysAreCachedAndRefetchedAtMostOncePerMinute(t *testing.T) {
	g := NewWithT(t)
	key, other := testKeys(t)
	srv, calls := jwksServer(t, key)
	tokens := NewIDTokens(testIssuer, srv.URL)
	ctx := context.Background()
	for range 3 {
		g.Expect(tokens.Verify(ctx, idToken(t, key, "k1", nil), testAudience, testEmail)).To(Succeed())
	}
	g.Expect(calls.Load()).To(BeEquivalentTo(1))
	for _, kid := range []string{"k2", "k3", "k4"} {
		g.Expect(tokens.Verify(ctx, idToken(t, other, kid, nil), testAudience, testEmail)).To(MatchError(ContainSubstring("does not publish")))
	}
	g.Expect(calls.Load()).To(BeEquivalentTo(1), "unknown key ids within a minute of the last fetch")
	// Still verifies with the cached key.
	g.Expect(tokens.Verify(ctx, idToken(t, key, "k1", nil), testAudience, testEmail)).To(Succeed())
}

func TestIDTokenKeysFromABadJWKSEndpointAreRefused(t *testing.T) {
	key, _ := testKeys(t)
	for name, h := range map[string]http.HandlerFunc{
		"500": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		},
		"too large": func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"keys":[` + strings.Repeat(" ", maxJWKSBytes) + `]}`))
		},
		"no keys":  func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"keys":[]}`)) },
		"not JSON": func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`<html>`)) },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := httptest.NewServer(h)
			defer srv.Close()
			err := NewIDTokens(testIssuer, srv.URL).Verify(context.Background(), idToken(t, key, "k1", nil), testAudience, testEmail)
			g.Expect(err).To(MatchError(ContainSubstring("fetching the issuer's keys")))
		})
	}
}

// When Google rotates its keys, a token signed with the new key is taken
// once the key set may be fetched again (a minute after the last fetch),
// and the cached keys are fetched again after an hour anyway.
func TestIDTokenKeysFollowARotation(t *testing.T) {
	g := NewWithT(t)
	oldKey, newKey := testKeys(t)
	publish := func(key *rsa.PrivateKey, kid string) []byte {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var published atomic.Value
	published.Store(publish(oldKey, "k1"))
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Write(published.Load().([]byte))
	}))
	defer srv.Close()
	clock := time.Now()
	tokens := NewIDTokens(testIssuer, srv.URL)
	tokens.Now = func() time.Time { return clock }
	ctx := context.Background()
	long := func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(clock.Add(24 * time.Hour)) }

	g.Expect(tokens.Verify(ctx, idToken(t, oldKey, "k1", long), testAudience, testEmail)).To(Succeed())
	published.Store(publish(newKey, "k2"))
	rotated := idToken(t, newKey, "k2", long)
	g.Expect(tokens.Verify(ctx, rotated, testAudience, testEmail)).To(MatchError(ContainSubstring("does not publish")), "within a minute of the last fetch")
	g.Expect(calls.Load()).To(BeEquivalentTo(1))

	clock = clock.Add(keysMinRefresh + time.Second)
	g.Expect(tokens.Verify(ctx, rotated, testAudience, testEmail)).To(Succeed())
	g.Expect(calls.Load()).To(BeEquivalentTo(2))
	g.Expect(tokens.Verify(ctx, idToken(t, oldKey, "k1", long), testAudience, testEmail)).To(MatchError(ContainSubstring("does not publish")), "the retired key")

	// A known key is used from the cache for an hour, then fetched again.
	g.Expect(tokens.Verify(ctx, rotated, testAudience, testEmail)).To(Succeed())
	g.Expect(calls.Load()).To(BeEquivalentTo(2))
	clock = clock.Add(keysMaxAge + time.Second)
	g.Expect(tokens.Verify(ctx, rotated, testAudience, testEmail)).To(Succeed())
	g.Expect(calls.Load()).To(BeEquivalentTo(3))
}
