package receiver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	. "github.com/onsi/gomega"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/netguard"
)

// oidcIssuer stands in for an OIDC issuer on 127.0.0.1: it answers GET
// /.well-known/openid-configuration with its own URL as issuer and GET
// /keys with the public half of key under kid "ec1", as an issuer does,
// and anything else 404 or 405. It counts the calls of each path.
type oidcIssuer struct {
	srv   *httptest.Server
	key   *ecdsa.PrivateKey
	calls map[string]*atomic.Int32
	// discoveryIssuer, when set, is the issuer the discovery document
	// claims instead of the server's URL.
	discoveryIssuer string
}

func newOIDCIssuer(t *testing.T) *oidcIssuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o := &oidcIssuer{key: key, calls: map[string]*atomic.Int32{"/.well-known/openid-configuration": {}, "/keys": {}}}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, ok := o.calls[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		n.Add(1)
		var doc any
		if r.URL.Path == "/keys" {
			doc = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "ec1", Algorithm: string(jose.ES256), Use: "sig"}}}
		} else {
			iss := o.srv.URL
			if o.discoveryIssuer != "" {
				iss = o.discoveryIssuer
			}
			doc = map[string]any{"issuer": iss, "jwks_uri": o.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"ES256"}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// token is an ID token the issuer signs for audience "notification-controller"
// and a GitHub Actions workflow of plumb/app, valid for an hour; change
// edits its claims before it is signed.
func (o *oidcIssuer) token(t *testing.T, change func(c *jwt.Claims, extra map[string]any)) string {
	return signOIDC(t, o.key, o.srv.URL, change)
}

func signOIDC(t *testing.T, key *ecdsa.PrivateKey, issuer string, change func(c *jwt.Claims, extra map[string]any)) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "ec1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := jwt.Claims{
		Issuer: issuer, Subject: "repo:plumb/app:ref:refs/heads/main", Audience: jwt.Audience{notificationv1.DefaultOIDCAudience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
	}
	extra := map[string]any{"repository": "plumb/app", "repository_owner": "plumb", "ref": "refs/heads/main"}
	if change != nil {
		change(&c, extra)
	}
	raw, err := jwt.Signed(signer).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// providers are a Receiver's: the stand-in issuer, callers of the plumb
// organisation's repositories only.
func (o *oidcIssuer) providers() []notificationv1.OIDCProvider {
	return []notificationv1.OIDCProvider{{
		IssuerURL: o.srv.URL,
		Variables: []notificationv1.OIDCVariable{
			{Name: "owner", Expression: "claims.repository_owner"},
			{Name: "allowed", Expression: "[vars.owner + '/app', vars.owner + '/infra']"},
		},
		Validations: []notificationv1.OIDCValidation{
			{Expression: "vars.owner == 'plumb'", Message: "wrong organisation"},
			{Expression: "claims.repository in vars.allowed", Message: "repository not allowed"},
		},
	}}
}

// loopbackOIDC verifies through the egress policy, with loopback allowed
// for the stand-in issuer.
func loopbackOIDC() *OIDCTokens {
	p := netguard.Policy{AllowLoopback: true}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.Dialer(5 * time.Second).DialContext
	return NewOIDCTokens(&http.Client{Transport: t, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
}

func oidcCall(v *Verifier, providers []notificationv1.OIDCProvider, header http.Header) (Verdict, error) {
	return v.Verify(context.Background(), Call{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: providers, Header: header, Body: []byte(`anything`)})
}

func TestGenericOIDCAcceptsATokenOfAListedIssuerThatPassesTheValidations(t *testing.T) {
	g := NewWithT(t)
	iss := newOIDCIssuer(t)
	v := &Verifier{OIDC: loopbackOIDC()}
	verdict, err := oidcCall(v, iss.providers(), headers("Authorization", "Bearer "+iss.token(t, nil)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(verdict.Trigger).To(BeTrue())
	g.Expect(verdict.Claims).To(HaveKeyWithValue("repository", "plumb/app"))

	// The keys are discovered and fetched once, then cached.
	_, err = oidcCall(v, iss.providers(), headers("Authorization", "Bearer "+iss.token(t, nil)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iss.calls["/.well-known/openid-configuration"].Load()).To(BeEquivalentTo(1))
	g.Expect(iss.calls["/keys"].Load()).To(BeEquivalentTo(1))

	// An audience of the provider's own.
	p := iss.providers()
	p[0].Audience = "https://hooks.example.com"
	_, err = oidcCall(v, p, headers("Authorization", "Bearer "+iss.token(t, func(c *jwt.Claims, _ map[string]any) {
		c.Audience = jwt.Audience{"https://hooks.example.com"}
	})))
	g.Expect(err).NotTo(HaveOccurred())
}

func TestGenericOIDCRefusesTokensItCannotTrust(t *testing.T) {
	iss := newOIDCIssuer(t)
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hs256, err := jwt.Signed(mustSigner(t, jose.HS256, []byte(strings.Repeat("k", 32)))).
		Claims(jwt.Claims{Issuer: iss.srv.URL, Audience: jwt.Audience{notificationv1.DefaultOIDCAudience}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	v := &Verifier{OIDC: loopbackOIDC()}
	for name, tc := range map[string]struct {
		header http.Header
		reason string
	}{
		"missing token": {headers(), "no Authorization: Bearer"},
		"not bearer":    {headers("Authorization", "Basic dXNlcjpwYXNz"), "no Authorization: Bearer"},
		"wrong audience": {headers("Authorization", "Bearer "+iss.token(t, func(c *jwt.Claims, _ map[string]any) {
			c.Audience = jwt.Audience{"sts.amazonaws.com"}
		})), "not for audience"},
		"wrong issuer": {headers("Authorization", "Bearer "+signOIDC(t, iss.key, "https://token.actions.githubusercontent.com", nil)), "not in spec.oidcProviders"},
		"expired": {headers("Authorization", "Bearer "+iss.token(t, func(c *jwt.Claims, _ map[string]any) {
			c.IssuedAt, c.NotBefore = jwt.NewNumericDate(time.Now().Add(-3*time.Hour)), jwt.NewNumericDate(time.Now().Add(-3*time.Hour))
			c.Expiry = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
		})), "expired"},
		"not yet valid": {headers("Authorization", "Bearer "+iss.token(t, func(c *jwt.Claims, _ map[string]any) {
			c.NotBefore = jwt.NewNumericDate(time.Now().Add(10 * time.Minute))
		})), "not valid yet"},
		"no expiry":     {headers("Authorization", "Bearer "+iss.token(t, func(c *jwt.Claims, _ map[string]any) { c.Expiry = nil })), "no expiry"},
		"bad signature": {headers("Authorization", "Bearer "+signOIDC(t, other, iss.srv.URL, nil)), "signature"},
		"HS256":         {headers("Authorization", "Bearer "+hs256), "not a JWT signed with"},
		"fails a validation": {headers("Authorization", "Bearer "+iss.token(t, func(_ *jwt.Claims, e map[string]any) {
			e["repository_owner"], e["repository"] = "evil", "plumb/other"
		})), "wrong organisation; repository not allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := oidcCall(v, iss.providers(), tc.header)
			g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.reason))
		})
	}
}

// An issuer whose discovery document names another issuer is not
// trusted, and an issuer on an address the egress policy refuses is not
// fetched at all.
func TestGenericOIDCDiscoveryIsCheckedAndGuarded(t *testing.T) {
	g := NewWithT(t)
	iss := newOIDCIssuer(t)
	iss.discoveryIssuer = "https://elsewhere.example.com"
	_, err := oidcCall(&Verifier{OIDC: loopbackOIDC()}, iss.providers(), headers("Authorization", "Bearer "+iss.token(t, nil)))
	g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("discovery document is for issuer")))

	iss = newOIDCIssuer(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = netguard.Policy{}.Dialer(5 * time.Second).DialContext
	_, err = oidcCall(&Verifier{OIDC: NewOIDCTokens(&http.Client{Transport: tr, Timeout: 5 * time.Second})},
		iss.providers(), headers("Authorization", "Bearer "+iss.token(t, nil)))
	g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("refused")))
	g.Expect(iss.calls["/.well-known/openid-configuration"].Load()).To(BeZero())
}

// The reconciler refuses what the CRD refuses (for objects stored
// before a rule) and expressions that do not compile; claims is declared
// in resourceFilter for generic-oidc only.
func TestCheckOIDCMirrorsTheCRD(t *testing.T) {
	valid := notificationv1.OIDCProvider{IssuerURL: "https://token.actions.githubusercontent.com",
		Validations: []notificationv1.OIDCValidation{{Expression: "claims.repository_owner == 'plumb'", Message: "wrong org"}}}
	with := func(change func(p *notificationv1.OIDCProvider)) notificationv1.OIDCProvider {
		p := valid
		p.Validations = slices.Clone(valid.Validations)
		change(&p)
		return p
	}
	secret := &meta.LocalObjectReference{Name: "token"}
	for name, tc := range map[string]struct {
		spec   notificationv1.ReceiverSpec
		reason string
	}{
		"valid":                    {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{valid}}, ""},
		"github":                   {notificationv1.ReceiverSpec{Type: notificationv1.GitHubReceiver, SecretRef: secret}, ""},
		"no providers":             {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver}, "at least one spec.oidcProviders"},
		"secretRef":                {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, SecretRef: secret, OIDCProviders: []notificationv1.OIDCProvider{valid}}, "remove spec.secretRef"},
		"providers on github":      {notificationv1.ReceiverSpec{Type: notificationv1.GitHubReceiver, SecretRef: secret, OIDCProviders: []notificationv1.OIDCProvider{valid}}, "only for type generic-oidc"},
		"github without secretRef": {notificationv1.ReceiverSpec{Type: notificationv1.GitHubReceiver}, "spec.secretRef is required"},
		"no validation": {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{
			with(func(p *notificationv1.OIDCProvider) { p.Validations = nil })}}, "at least one validation"},
		"twice": {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{valid, valid}}, "listed twice"},
		"not a URL": {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{
			with(func(p *notificationv1.OIDCProvider) { p.IssuerURL = "token.actions.githubusercontent.com" })}}, "not an http(s) URL"},
		"not a bool": {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{
			with(func(p *notificationv1.OIDCProvider) { p.Validations[0].Expression = "size(claims)" })}}, "validation \"wrong org\""},
		"bad variable": {notificationv1.ReceiverSpec{Type: notificationv1.GenericOIDCReceiver, OIDCProviders: []notificationv1.OIDCProvider{
			with(func(p *notificationv1.OIDCProvider) {
				p.Variables = []notificationv1.OIDCVariable{{Name: "x", Expression: "claims."}}
			})}}, "variable \"x\""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckOIDC(&notificationv1.Receiver{Spec: tc.spec})
			if tc.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.reason)))
		})
	}
	g := NewWithT(t)
	_, err := CompileFilter("claims.repository == res.metadata.name", notificationv1.GenericOIDCReceiver)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = CompileFilter("claims.repository == res.metadata.name", notificationv1.GitHubReceiver)
	g.Expect(err).To(MatchError(ContainSubstring("claims")))
}
