package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"plumb.dev/pkg/events"
)

// googlePubSub publishes each event on a Google Cloud Pub/Sub topic, as
// Flux's googlepubsub does: the message's data is the event's JSON (the
// generic webhook's), its attributes the Secret's headers; the address is
// the GCP project ID, spec.channel the topic ID, and the Secret's token a
// service account's JSON key, whose account needs roles/pubsub.publisher
// on the topic.
//
// It is Pub/Sub's REST API (topics.publish, one message per request)
// through Config.do, rather than the Pub/Sub client library, which
// batches, retries and sends on its own connections and goroutines,
// outside the dispatcher's client, its address policy and its single
// attempt per Post. Flux's fallback to the environment's identity
// (workload identity, the metadata server) has no counterpart: the
// address policy refuses the metadata addresses, so the key is required.
type googlePubSub struct {
	cfg            Config
	project, topic string
	tokens         *googleTokens
	// endpoint is Pub/Sub's base URL; tests point it at a stand-in (Flux
	// has no field for it either).
	endpoint string
}

// pubsubScope is the OAuth scope the token asks for: publishing, and
// nothing of the project's other services.
const pubsubScope = "https://www.googleapis.com/auth/pubsub"

const (
	pubsubEndpoint = "https://pubsub.googleapis.com"
	googleKeyToken = "a Google service account's JSON key"
)

// Pub/Sub's names and limits: a project ID (or a legacy domain-scoped
// one, example.com:project), a topic ID, and at most 100 attributes of
// keys up to 256 bytes and values up to 1024 bytes; the "goog" prefix is
// Google's own.
var (
	pubsubProjectForm = regexp.MustCompile(`^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	pubsubTopicForm   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$`)
)

const (
	pubsubMaxAttributes = 100
	pubsubMaxKey        = 256
	pubsubMaxValue      = 1024
)

func newGooglePubSub(cfg Config) (Notifier, error) {
	if !pubsubProjectForm.MatchString(cfg.Address) {
		return nil, fmt.Errorf("a %s provider's address must be a GCP project ID", cfg.Type)
	}
	if !pubsubTopicForm.MatchString(cfg.Channel) || strings.HasPrefix(strings.ToLower(cfg.Channel), "goog") {
		return nil, fmt.Errorf("a %s provider's channel must be a Pub/Sub topic ID: 3 to 255 letters, digits and -._~+%%, starting with a letter, not with goog", cfg.Type)
	}
	if err := checkPubSubAttributes(cfg.Headers); err != nil {
		return nil, err
	}
	if cfg.Token == "" {
		return nil, errNoToken(cfg.Type, googleKeyToken)
	}
	tokens, err := googleTokensFor(cfg.Type, []byte(cfg.Token), pubsubScope, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	return &googlePubSub{cfg: cfg, project: cfg.Address, topic: cfg.Channel, tokens: tokens, endpoint: pubsubEndpoint}, nil
}

// checkPubSubAttributes refuses headers Pub/Sub would refuse as
// attributes, naming the key (a header's name is no secret; its value
// may be).
func checkPubSubAttributes(headers map[string]string) error {
	if len(headers) > pubsubMaxAttributes {
		return fmt.Errorf("the Secret's headers are a googlepubsub message's attributes: at most %d, not %d", pubsubMaxAttributes, len(headers))
	}
	for k, v := range headers {
		switch {
		case k == "" || len(k) > pubsubMaxKey:
			return fmt.Errorf("the Secret's headers are a googlepubsub message's attributes: a key is 1 to %d bytes", pubsubMaxKey)
		case strings.HasPrefix(strings.ToLower(k), "goog"):
			return fmt.Errorf("the Secret's header %q cannot be a googlepubsub attribute: the goog prefix is Google's", k)
		case len(v) > pubsubMaxValue:
			return fmt.Errorf("the Secret's header %q is longer than a googlepubsub attribute's %d bytes", k, pubsubMaxValue)
		}
	}
	return nil
}

// pubsubPublish is the body of topics.publish; data is base64, as
// encoding/json writes a []byte.
type (
	pubsubPublish struct {
		Messages []pubsubMessage `json:"messages"`
	}
	pubsubMessage struct {
		Data       []byte            `json:"data"`
		Attributes map[string]string `json:"attributes,omitempty"`
	}
)

func (n *googlePubSub) Post(ctx context.Context, e events.Event) error {
	data, err := json.Marshal(withoutUserInfo(e))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encoding the event: %w", err)}
	}
	token, err := n.tokens.get(ctx, n.cfg)
	if err != nil {
		return err
	}
	a, err := n.cfg.do(ctx, request{
		method: http.MethodPost,
		url: n.endpoint + "/v1/projects/" + url.PathEscape(n.project) +
			"/topics/" + url.PathEscape(n.topic) + ":publish",
		payload: pubsubPublish{Messages: []pubsubMessage{{Data: data, Attributes: n.cfg.Headers}}},
		header:  bearerAuth(token),
	})
	if err != nil || a.ok() {
		return err
	}
	if a.code == http.StatusUnauthorized {
		n.tokens.forget(token)
	}
	// Google's errors carry a status of a fixed vocabulary (NOT_FOUND,
	// PERMISSION_DENIED), which says what to fix.
	var answer struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.body, &answer)
	return statusError(n.cfg.Type, a, serviceCode(answer.Error.Status), retryable(a.code))
}
