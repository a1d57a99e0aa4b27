package notifier

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// --- Google: the OAuth 2.0 token endpoint of a service account's key
// (POST <token_uri>, the JWT bearer grant) and Pub/Sub's topics.publish
// (POST /v1/projects/<project>/topics/<topic>:publish with the token).

const (
	testProject = "my-project"
	testTopic   = "plumb-events"
	testEmail   = "plumb@my-project.iam.gserviceaccount.com"
	testKeyID   = "0123abcd"
)

// googleService plays Google for one service account: the token endpoint
// verifies the assertion with the account's public key and issues
// tokens; Pub/Sub takes a message on the topic with an issued token.
type googleService struct {
	public *rsa.PublicKey
	url    func() string // the stand-in's URL, known once it listens

	mu     sync.Mutex
	issued map[string]bool
}

// pubsubAccepted is what the stand-in's Pub/Sub took: the message's data
// decoded as an event, and its attributes.
type pubsubAccepted struct {
	Event      events.Event
	Attributes map[string]string
}

func (g *googleService) tokens() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.issued)
}

func (g *googleService) handle(r *http.Request, body []byte) (int, any, any) {
	if r.URL.Path == "/token" {
		return g.token(r, body)
	}
	return g.publish(r, body)
}

func (g *googleService) token(r *http.Request, body []byte) (int, any, any) {
	refuse := func(code string) (int, any, any) {
		return http.StatusBadRequest, map[string]string{"error": code, "error_description": "Invalid JWT"}, nil
	}
	if err := isPost(r, "/token", "application/x-www-form-urlencoded"); err != nil {
		return http.StatusNotFound, map[string]string{"error": "not_found"}, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return refuse("unsupported_grant_type")
	}
	parts := strings.Split(form.Get("assertion"), ".")
	if len(parts) != 3 {
		return refuse("invalid_request")
	}
	var header struct{ Alg, Kid, Typ string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		return refuse("invalid_request")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	now := time.Now().Unix()
	switch {
	case header.Alg != "RS256" || header.Kid != testKeyID,
		rsa.VerifyPKCS1v15(g.public, crypto.SHA256, sum[:], sig) != nil,
		claims.Iss != testEmail || claims.Aud != g.url()+"/token",
		claims.Iat > now+60 || claims.Exp <= now || claims.Exp-claims.Iat > 3600:
		return refuse("invalid_grant")
	case !strings.Contains(" "+claims.Scope+" ", " https://www.googleapis.com/auth/pubsub "):
		return refuse("invalid_scope")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	token := fmt.Sprintf("ya29.token-%d", len(g.issued)+1)
	g.issued[token] = true
	return http.StatusOK, map[string]any{"access_token": token, "expires_in": 3599, "token_type": "Bearer"}, nil
}

func (g *googleService) publish(r *http.Request, body []byte) (int, any, any) {
	googleError := func(code int, status string) (int, any, any) {
		return code, map[string]any{"error": map[string]any{"code": code, "message": "call SECRET-BODY", "status": status}}, nil
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":publish") {
		return googleError(http.StatusNotFound, "NOT_FOUND")
	}
	g.mu.Lock()
	issued := g.issued[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	g.mu.Unlock()
	if !issued || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return googleError(http.StatusUnauthorized, "UNAUTHENTICATED")
	}
	if r.URL.Path != "/v1/projects/"+testProject+"/topics/"+testTopic+":publish" {
		return googleError(http.StatusNotFound, "NOT_FOUND")
	}
	var req struct {
		Messages []struct {
			Data       string            `json:"data"`
			Attributes map[string]string `json:"attributes"`
		} `json:"messages"`
	}
	if r.Header.Get("Content-Type") != "application/json" || strictJSON(body, &req) != nil || len(req.Messages) != 1 {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT")
	}
	data, err := base64.StdEncoding.DecodeString(req.Messages[0].Data)
	var e events.Event
	if err != nil || len(data) == 0 || json.Unmarshal(data, &e) != nil {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT")
	}
	return http.StatusOK, map[string]any{"messageIds": []string{"1"}}, pubsubAccepted{Event: e, Attributes: req.Messages[0].Attributes}
}

func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// serviceAccountKey writes a service account's JSON key as the Google
// Cloud console gives it, its token_uri at tokenURI.
func serviceAccountKey(t *testing.T, key *rsa.PrivateKey, tokenURI string) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": testProject, "private_key_id": testKeyID,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": testEmail, "client_id": "1234567890",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
		"universe_domain": "googleapis.com",
	})
	return string(b)
}

// withPrivateKey is a JSON key with another private_key.
func withPrivateKey(t *testing.T, jsonKey, privateKey string) string {
	var m map[string]string
	if err := json.Unmarshal([]byte(jsonKey), &m); err != nil {
		t.Fatal(err)
	}
	m["private_key"] = privateKey
	b, _ := json.Marshal(m)
	return string(b)
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// trusting is the TLS configuration of a certSecretRef holding the
// stand-in's certificate.
func trusting(s *standIn) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// newGoogleStandIn starts Google for the account of key.
func newGoogleStandIn(t *testing.T, key *rsa.PrivateKey) (*standIn, *googleService) {
	svc := &googleService{public: &key.PublicKey, issued: map[string]bool{}}
	s := newTLSStandIn(t, service(svc.handle).handle)
	svc.url = func() string { return s.URL }
	return s, svc
}

// pubsubConfig is a googlepubsub Provider's configuration for the stand-in:
// the dispatcher's client under a policy that allows loopback.
func pubsubConfig(t *testing.T, s *standIn, key *rsa.PrivateKey) Config {
	return Config{
		Type: notificationv1.GooglePubSubProvider, Address: testProject, Channel: testTopic,
		Token: serviceAccountKey(t, key, s.URL+"/token"), Credentials: true,
		Client: NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second), TLS: trusting(s),
	}
}

// newPubSub builds the notifier and points Pub/Sub's endpoint at s.
func newPubSub(t *testing.T, cfg Config, s *standIn) Notifier {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.(*googlePubSub).endpoint = s.URL
	return n
}

// TestGooglePubSubPublishesTheEvent: the event's JSON is the message's
// data and the Secret's headers its attributes, published with an access
// token of the service account's key, which is asked for once and kept
// (by the notifiers the dispatcher rebuilds too); user info in the
// event's text is removed.
func TestGooglePubSubPublishesTheEvent(t *testing.T) {
	g := NewWithT(t)
	key := rsaKey(t)
	s, google := newGoogleStandIn(t, key)
	cfg := pubsubConfig(t, s, key)
	cfg.Headers = map[string]string{"cluster": "eu-1", "X-Team": "apps"}

	e := testEvent()
	e.Message = "fetch of https://bot:hunter2@git.example.com/repo.git failed"
	g.Expect(newPubSub(t, cfg, s).Post(context.Background(), e)).To(Succeed())
	g.Expect(newPubSub(t, cfg, s).Post(context.Background(), recoveredEvent())).To(Succeed())
	g.Expect(google.tokens()).To(Equal(1), "one token for both notifiers")

	got := s.got()
	g.Expect(got).To(HaveLen(2))
	first := got[0].(pubsubAccepted)
	g.Expect(first.Attributes).To(Equal(map[string]string{"cluster": "eu-1", "X-Team": "apps"}))
	g.Expect(first.Event.ID).To(Equal(e.ID))
	g.Expect(first.Event.Reason).To(Equal(e.Reason))
	g.Expect(first.Event.Revision).To(Equal(e.Revision))
	g.Expect(first.Event.Message).To(Equal("fetch of https://git.example.com/repo.git failed"))
	g.Expect(got[1].(pubsubAccepted).Event.Reason).To(Equal(recoveredEvent().Reason))
}

// TestGooglePubSubFailures: what Google refuses says so in its words of a
// fixed vocabulary and is not retried; an outage is retried; an address
// the policy refuses is not; nothing of the answers' text is repeated.
func TestGooglePubSubFailures(t *testing.T) {
	post := func(cfg Config, s *standIn) error {
		return newPubSub(t, cfg, s).Post(context.Background(), testEvent())
	}
	t.Run("unknown topic", func(t *testing.T) {
		g := NewWithT(t)
		key := rsaKey(t)
		s, _ := newGoogleStandIn(t, key)
		cfg := pubsubConfig(t, s, key)
		cfg.Channel = "other-topic"
		err := post(cfg, s)
		g.Expect(err).To(MatchError(`the googlepubsub endpoint answered 404 Not Found, error "NOT_FOUND"`))
		g.Expect(IsPermanent(err)).To(BeTrue())
	})
	t.Run("key Google does not know", func(t *testing.T) {
		g := NewWithT(t)
		s, _ := newGoogleStandIn(t, rsaKey(t))
		err := post(pubsubConfig(t, s, rsaKey(t)), s)
		g.Expect(err).To(MatchError(`the googlepubsub token endpoint answered 400 Bad Request, error "invalid_grant"`))
		g.Expect(IsPermanent(err)).To(BeTrue())
	})
	t.Run("outage", func(t *testing.T) {
		g := NewWithT(t)
		key := rsaKey(t)
		s, _ := newGoogleStandIn(t, key)
		s.answer(http.StatusServiceUnavailable, nil)
		err := post(pubsubConfig(t, s, key), s)
		g.Expect(err).To(MatchError("the googlepubsub token endpoint answered 503 Service Unavailable"))
		g.Expect(IsPermanent(err)).To(BeFalse())
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
	})
	t.Run("refused address", func(t *testing.T) {
		g := NewWithT(t)
		key := rsaKey(t)
		s, google := newGoogleStandIn(t, key)
		cfg := pubsubConfig(t, s, key)
		cfg.Client = NewHTTPClient(AddressPolicy{}, 5*time.Second)
		err := post(cfg, s)
		g.Expect(IsPermanent(err)).To(BeTrue(), "%v", err)
		g.Expect(s.count()).To(BeZero())
		g.Expect(google.tokens()).To(BeZero())
	})
}

// TestGooglePubSubRefusesWhatCannotWork: a project, topic, attribute or
// key Google would refuse fails New, the Provider's reconcile, without
// quoting the key; a token_uri over plain http needs spec.insecure.
func TestGooglePubSubRefusesWhatCannotWork(t *testing.T) {
	key := rsaKey(t)
	good := Config{Type: notificationv1.GooglePubSubProvider, Address: testProject, Channel: testTopic,
		Token: serviceAccountKey(t, key, "https://oauth2.googleapis.com/token")}
	g := NewWithT(t)
	_, err := New(good)
	g.Expect(err).NotTo(HaveOccurred())
	cfg := good
	cfg.Address = "example.com:legacy-project"
	_, err = New(cfg)
	g.Expect(err).NotTo(HaveOccurred(), "a domain-scoped project")

	const notPEM = "-----BEGIN PRIVATE KEY-----\nSECRET\n-----END PRIVATE KEY-----\n"
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"project URL":     {func(c *Config) { c.Address = "https://pubsub.googleapis.com" }, "a googlepubsub provider's address must be a GCP project ID"},
		"topic path":      {func(c *Config) { c.Channel = "projects/p/topics/t" }, "a googlepubsub provider's channel must be a Pub/Sub topic ID"},
		"goog topic":      {func(c *Config) { c.Channel = "goog-events" }, "a googlepubsub provider's channel must be a Pub/Sub topic ID"},
		"goog attribute":  {func(c *Config) { c.Headers = map[string]string{"googclient_x": "1"} }, `the Secret's header "googclient_x" cannot be a googlepubsub attribute`},
		"long value":      {func(c *Config) { c.Headers = map[string]string{"k": strings.Repeat("v", 1025)} }, `the Secret's header "k" is longer than a googlepubsub attribute's 1024 bytes`},
		"no key":          {func(c *Config) { c.Token = "" }, `needs spec.secretRef with the key "token" (a Google service account's JSON key)`},
		"user key":        {func(c *Config) { c.Token = `{"type":"authorized_user","refresh_token":"SECRET"}` }, "must be a Google service account's JSON key"},
		"not JSON":        {func(c *Config) { c.Token = "SECRET" }, "must be a Google service account's JSON key"},
		"bad private key": {func(c *Config) { c.Token = withPrivateKey(t, good.Token, notPEM) }, "its private_key is not an RSA key in PEM"},
		"http token_uri":  {func(c *Config) { c.Token = serviceAccountKey(t, key, "http://oauth2.example.com/token") }, "use https://, or set spec.insecure"},
	} {
		cfg := good
		tc.change(&cfg)
		_, err := New(cfg)
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), name)
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"), name)
		g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE"), name)
	}
}
