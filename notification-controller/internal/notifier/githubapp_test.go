package notifier

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/githubapp"
)

// githubAppStandIn adds a GitHub App's own endpoints to a comment
// stand-in, as GitHub serves them: each checks the App's JWT (RS256,
// signed by the App's key, its ID as issuer); the installation's token is
// then what the repository endpoints accept, and the App's bot what they
// name as the comments' author.
func githubAppStandIn(t *testing.T, key *rsa.PrivateKey) (*commentStandIn, *atomic.Int32) {
	host := newCommentStandIn(t, notificationv1.GitHubPullRequestCommentProvider)
	host.bot = "plumb-notifier[bot]"
	host.contract.authorized = hasAuth("Bearer ghs_installation1")
	var minted atomic.Int32
	host.app = func(w http.ResponseWriter, r *http.Request) {
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := jwt.Parse(bearer, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("4711")); err != nil {
			reply(w, http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded"})
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v3/app/installations/99/access_tokens":
			minted.Add(1)
			reply(w, http.StatusCreated, map[string]any{"token": "ghs_installation1", "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		case r.Method == http.MethodGet && r.URL.Path == "/api/v3/app":
			reply(w, http.StatusOK, map[string]any{"id": 4711, "slug": "plumb-notifier", "name": "Plumb notifier"})
		default:
			reply(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		}
	}
	return host, &minted
}

// TestGitHubAppProvidersWriteAsTheApp: a githubpullrequestcomment
// Provider whose Secret holds a GitHub App (Flux's keys) writes with an
// installation token minted from the App's key, and finds its own comment
// by the App's bot login rather than asking GET /user (which an
// installation token cannot): the second event edits the first comment.
// The token is minted once for both notifiers, as the dispatcher builds
// them; a key the App does not have is refused with GitHub's status only.
func TestGitHubAppProvidersWriteAsTheApp(t *testing.T) {
	g := NewWithT(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	host, minted := githubAppStandIn(t, key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string][]byte{
		githubapp.AppIDKey: []byte("4711"), githubapp.InstallationIDKey: []byte("99"),
		githubapp.PrivateKeyKey: keyPEM, githubapp.BaseURLKey: []byte(host.URL + "/api/v3"),
	}}
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pr", UID: "0c9e5f1d-2b7a-4c61-9d7e-0a1b2c3d4e5f"},
		Spec: notificationv1.ProviderSpec{Type: notificationv1.GitHubPullRequestCommentProvider, Address: host.URL + "/org/repo",
			Insecure: true, SecretRef: &meta.LocalObjectReference{Name: "app"}},
	}
	cfg, err := ConfigFor(context.Background(), fake.NewClientBuilder().WithObjects(secret).Build(), provider)
	g.Expect(err).NotTo(HaveOccurred(), "a GitHub App stands in for the token")
	g.Expect(cfg.GitHubApp).NotTo(BeNil())
	_, err = New(cfg)
	g.Expect(err).NotTo(HaveOccurred(), "a Provider with an App is valid before any token is minted")

	var tokens githubapp.Tokens
	post := func(message string) {
		c := cfg
		c.Client = host.Client()
		g.Expect(AuthenticateApp(context.Background(), &c, &tokens)).To(Succeed())
		n, err := New(c)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.Post(context.Background(), prEvent("web", events.SeverityInfo, kustomizev1.AppliedReason, message))).To(Succeed())
	}
	post("revision preview: 2 created")
	post("revision preview: 1 configured")
	comments := host.of("42")
	g.Expect(comments).To(HaveLen(1), "the second event edits the App's comment")
	g.Expect(comments[0].author).To(Equal("plumb-notifier[bot]"))
	g.Expect(comments[0].updated).To(Equal(1))
	g.Expect(comments[0].body).To(ContainSubstring("revision preview: 1 configured"))
	g.Expect(minted.Load()).To(Equal(int32(1)), "one token for both notifiers")
	for _, r := range host.requests() {
		g.Expect(r.URL.Path).NotTo(Equal("/api/v3/user"), "an installation token has no user")
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	wrong := cfg
	wrong.Client = host.Client()
	wrong.GitHubApp = &githubapp.App{AppID: 4711, InstallationID: 99, BaseURL: host.URL + "/api/v3",
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})}
	err = AuthenticateApp(context.Background(), &wrong, &githubapp.Tokens{})
	g.Expect(err).To(MatchError(fmt.Sprintf("the GitHub API answered 401 Unauthorized to the %s provider's GitHub App: check githubAppID, githubAppInstallationID and githubAppPrivateKey",
		notificationv1.GitHubPullRequestCommentProvider)))
	g.Expect(IsPermanent(err)).To(BeTrue())
	g.Expect(err.Error()).NotTo(ContainSubstring("JSON web token"), "GitHub's words are not repeated")
}

// TestGitHubAppKeysOnlyForGitHubTypes: a Secret with a GitHub App given to
// a Provider that cannot use one is an error, not keys ignored.
func TestGitHubAppKeysOnlyForGitHubTypes(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string][]byte{
		githubapp.AppIDKey: []byte("4711"), TokenKey: []byte("t"),
	}}
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gl"},
		Spec: notificationv1.ProviderSpec{Type: notificationv1.GitLabProvider, Address: "https://gitlab.example.com/g/p",
			SecretRef: &meta.LocalObjectReference{Name: "app"}},
	}
	_, err := ConfigFor(context.Background(), fake.NewClientBuilder().WithObjects(secret).Build(), provider)
	NewWithT(t).Expect(err).To(MatchError("secret ns/app holds a GitHub App (githubAppID), which a gitlab provider cannot use"))
}
