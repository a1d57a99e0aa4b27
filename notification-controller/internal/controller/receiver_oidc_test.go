package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/receiver"
)

// standInIssuer serves, on 127.0.0.1, what an OIDC issuer serves to a
// verifier: GET /.well-known/openid-configuration naming itself as issuer
// and /keys as jwks_uri, and GET /keys with the public half of key (kid
// "k1"); any other path or method is refused as a real one would.
func standInIssuer(t *testing.T) (*httptest.Server, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var doc any
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			doc = map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/keys"}
		case "/keys":
			doc = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv, key
}

// idToken is a token of issuer for a workflow of plumb/app, signed with
// key; change edits its claims first.
func idToken(t *testing.T, key *ecdsa.PrivateKey, issuer string, change func(*jwt.Claims)) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := jwt.Claims{Issuer: issuer, Subject: "repo:plumb/app:ref:refs/heads/main", Audience: jwt.Audience{"plumb-hooks"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(10 * time.Minute))}
	if change != nil {
		change(&c)
	}
	raw, err := jwt.Signed(signer).Claims(c).Claims(map[string]any{"repository": "plumb/app", "repository_owner": "plumb"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func oidcProvider(issuer string) notificationv1.OIDCProvider {
	return notificationv1.OIDCProvider{
		IssuerURL: issuer, Audience: "plumb-hooks",
		Validations: []notificationv1.OIDCValidation{{Expression: "claims.repository_owner == 'plumb'", Message: "wrong organisation"}},
	}
}

// TestGenericOIDCReceiver: a Receiver without a Secret is served on the
// hash of its name and namespace; a call whose ID token the listed issuer
// signed for the audience and that passes the validations annotates the
// GitRepository its claims select; any other is 401 and annotates nothing.
func TestGenericOIDCReceiver(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	issuer, key := standInIssuer(t)
	_, otherKey := standInIssuer(t)
	app := gitRepository(t, ns, "app", map[string]string{"repository": "app"}, true)
	rcv := createReceiver(t, ns, "oidc", notificationv1.GenericOIDCReceiver, func(s *notificationv1.ReceiverSpec) {
		s.SecretRef = nil
		s.OIDCProviders = []notificationv1.OIDCProvider{oidcProvider(issuer.URL)}
		s.Resources[0].Name = "*"
		s.ResourceFilter = "claims.repository == 'plumb/' + res.metadata.labels['repository']"
	})
	g.Expect(rcv.Status.WebhookPath).To(Equal(receiver.WebhookPath("", "oidc", ns)))

	for name, header := range map[string]map[string]string{
		"missing token":  {},
		"wrong audience": {"Authorization": "Bearer " + idToken(t, key, issuer.URL, func(c *jwt.Claims) { c.Audience = jwt.Audience{"notification-controller"} })},
		"wrong issuer":   {"Authorization": "Bearer " + idToken(t, key, "https://token.actions.githubusercontent.com", nil)},
		"expired": {"Authorization": "Bearer " + idToken(t, key, issuer.URL, func(c *jwt.Claims) {
			c.IssuedAt, c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)), jwt.NewNumericDate(time.Now().Add(-30*time.Minute))
		})},
		"bad signature": {"Authorization": "Bearer " + idToken(t, otherKey, issuer.URL, nil)},
	} {
		code, msg := post(t, rcv.Status.WebhookPath, header, []byte(`{}`))
		g.Expect(code).To(Equal(http.StatusUnauthorized), "%s: %s", name, msg)
	}
	g.Expect(requestedAt(t, app)).To(BeEmpty())

	code, msg := post(t, rcv.Status.WebhookPath, map[string]string{"Authorization": "Bearer " + idToken(t, key, issuer.URL, nil)}, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("GitRepository/app"))
	g.Expect(requestedAt(t, app)).NotTo(BeEmpty())
}

// TestGenericOIDCAdmission: the API server takes a generic-oidc Receiver
// with an issuer and a validation, and refuses one without providers,
// with a Secret, without validations, or providers on another type.
func TestGenericOIDCAdmission(t *testing.T) {
	ns := newNamespace(t)
	oidc := func(name string, change func(*notificationv1.ReceiverSpec)) *notificationv1.Receiver {
		r := &notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: notificationv1.ReceiverSpec{
				Type:          notificationv1.GenericOIDCReceiver,
				OIDCProviders: []notificationv1.OIDCProvider{oidcProvider("https://token.actions.githubusercontent.com")},
				Resources:     []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
			},
		}
		if change != nil {
			change(&r.Spec)
		}
		return r
	}
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), oidc("accepted", nil))).To(Succeed())
	for name, tc := range map[string]struct {
		change func(*notificationv1.ReceiverSpec)
		reason string
	}{
		"no providers":   {func(s *notificationv1.ReceiverSpec) { s.OIDCProviders = nil }, "at least one spec.oidcProviders"},
		"secretRef":      {func(s *notificationv1.ReceiverSpec) { s.SecretRef = &meta.LocalObjectReference{Name: "token"} }, "remove spec.secretRef"},
		"no validations": {func(s *notificationv1.ReceiverSpec) { s.OIDCProviders[0].Validations = nil }, "validations"},
		"not a URL": {func(s *notificationv1.ReceiverSpec) {
			s.OIDCProviders[0].IssuerURL = "token.actions.githubusercontent.com"
		}, "issuerURL"},
		"providers on github": {func(s *notificationv1.ReceiverSpec) {
			s.Type, s.SecretRef = notificationv1.GitHubReceiver, &meta.LocalObjectReference{Name: "token"}
		}, "only for type generic-oidc"},
		"github without secretRef": {func(s *notificationv1.ReceiverSpec) { s.Type, s.OIDCProviders = notificationv1.GitHubReceiver, nil }, "spec.secretRef is required"},
	} {
		err := k8s.Create(context.Background(), oidc("refused", tc.change))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.reason), name)
	}
}
