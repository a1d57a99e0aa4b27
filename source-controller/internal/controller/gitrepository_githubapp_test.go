package controller

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// fakeGitHubAPI answers POST /app/installations/{installation}/access_tokens
// as GitHub does: only with a JWT signed RS256 by the App's key, issued by
// the App's ID and living at most ten minutes; it counts the tokens minted.
func fakeGitHubAPI(t *testing.T, appID string, installation int, key *rsa.PublicKey, token string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var minted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != fmt.Sprintf("/app/installations/%d/access_tokens", installation) {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(bearer, &claims, func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(appID), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
		if !ok || err != nil || claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute {
			http.Error(w, `{"message":"A JSON web token could not be decoded"}`, http.StatusUnauthorized)
			return
		}
		minted.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":%q,"expires_at":%q}`, token, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return srv, &minted
}

func rsaKeyPEM(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func TestGitHubAppInstallationTokensAuthenticateClonesAndAreReused(t *testing.T) {
	g := NewWithT(t)
	appKey, appPEM := rsaKeyPEM(t)
	_, otherPEM := rsaKeyPEM(t)
	api, minted := fakeGitHubAPI(t, "123", 42, &appKey.PublicKey, "ghs_installation")
	// A Git server that takes the installation token only.
	srv, err := testgit.NewServer(testgit.Options{Username: "x-access-token", Password: "ghs_installation"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { srv.Close() })
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	c1 := mustCommit(t, repo, "main", "one", testgit.Files{"cm.yaml": "v: 1"})
	ns := namespace(t)
	app := func(name, key string, extra map[string]string) *meta.LocalObjectReference {
		data := map[string]string{"githubAppID": "123", "githubAppInstallationID": "42", "githubAppPrivateKey": key, "githubAppBaseURL": api.URL}
		for k, v := range extra {
			data[k] = v
		}
		credentials(t, ns, name, data)
		return &meta.LocalObjectReference{Name: name}
	}
	github := func(name string, secret *meta.LocalObjectReference) *sourcev1.GitRepository {
		obj := newGitRepository(ns, name, repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
		obj.Spec.Provider = sourcev1.GitProviderGitHub
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		return obj
	}

	obj := github("app", app("app", appPEM, nil))
	key := keyOf(obj)
	obj = waitReady(t, key, "main@sha1:"+c1)
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))
	g.Expect(minted.Load()).To(Equal(int32(1)))

	// The next fetch reuses the token, which lives an hour.
	c2 := mustCommit(t, repo, "main", "two", testgit.Files{"cm.yaml": "v: 2"})
	requestReconcile(t, key, "again")
	waitReady(t, key, "main@sha1:"+c2)
	g.Expect(minted.Load()).To(Equal(int32(1)))

	// A key that is not the App's gets no token: the API's refusal says why.
	wrong := waitFailed(t, keyOf(github("wrong-key", app("wrong-key", otherPEM, nil))), sourcev1.AuthenticationFailedReason)
	g.Expect(condition(wrong, meta.ReadyCondition).Message).To(ContainSubstring(
		"minting a GitHub App installation token: the GitHub API refused the App: 401 Unauthorized"))

	// Flux's lookup by owner is not supported, and says so.
	owner := waitFailed(t, keyOf(github("owner", app("owner", appPEM, map[string]string{
		"githubAppInstallationID": "", "githubAppInstallationOwner": "plumb"}))), sourcev1.AuthenticationFailedReason)
	g.Expect(condition(owner, meta.ReadyCondition).Message).To(ContainSubstring(
		"githubAppInstallationOwner is not supported; set githubAppInstallationID"))
	g.Expect(minted.Load()).To(Equal(int32(1)))
}
