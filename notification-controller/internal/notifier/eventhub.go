package notifier

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"plumb.dev/pkg/events"
)

// azureEventHub sends each event, its JSON (the generic webhook's), to an
// Azure Event Hub, as Flux's azureeventhub does, in either of Flux's two
// forms:
//   - the address is the connection string of a shared access policy
//     (Endpoint=sb://<namespace>.servicebus.windows.net/;
//     SharedAccessKeyName=<name>;SharedAccessKey=<key>;EntityPath=<hub>),
//     kept in the Secret: each request carries a shared access signature
//     made with the key;
//   - the address is the event hub's name, spec.channel its namespace
//     (a bare name gets .servicebus.windows.net), and the Secret's token
//     a Microsoft Entra access token for Event Hubs, sent as a bearer
//     token.
//
// Flux's third form, a token of the environment's identity (workload
// identity), has no counterpart: Plumb has no cloud identity.
//
// It is Event Hubs' HTTPS send (POST /<hub>/messages) through Config.do
// rather than the SDK's AMQP connection, which would bypass the
// dispatcher's client and its address policy.
type azureEventHub struct {
	cfg Config
	// resource is https://<namespace host>/<hub>, what a signature
	// grants; the messages endpoint is under it.
	resource string
	// keyName and key sign requests; without them token authenticates.
	keyName, key string
}

// eventHubDomain is the public cloud's Event Hubs domain, added to a
// bare namespace name.
const eventHubDomain = ".servicebus.windows.net"

// eventHubSASLifetime is how long a request's signature is valid: long
// enough for a clock that is off by minutes, short enough that a
// signature seen in transit is soon worthless.
const eventHubSASLifetime = time.Hour

// Event Hubs' names: an event hub of letters, digits and ._- (starting
// and ending with a letter or digit), a namespace of letters, digits and
// hyphens.
var (
	eventHubNameForm      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,254}[A-Za-z0-9])?$`)
	eventHubNamespaceForm = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
)

func newAzureEventHub(cfg Config) (Notifier, error) {
	// Flux tells the forms apart the same way.
	if strings.Contains(cfg.Address, "SharedAccessKey") {
		if cfg.Token != "" {
			return nil, fmt.Errorf("an %s provider authenticates with its connection string's key or with a token, not both: remove the Secret's %q", cfg.Type, TokenKey)
		}
		host, hub, keyName, key, err := parseEventHubConnection(cfg.Address)
		if err != nil {
			return nil, fmt.Errorf("the %s provider's connection string %w", cfg.Type, err)
		}
		return &azureEventHub{cfg: cfg, resource: "https://" + host + "/" + hub, keyName: keyName, key: key}, nil
	}
	if !eventHubNameForm.MatchString(cfg.Address) {
		return nil, fmt.Errorf("an %s provider's address must be an Event Hubs connection string (in the Secret) or an event hub's name", cfg.Type)
	}
	if cfg.Token == "" {
		return nil, errNoToken(cfg.Type, "a Microsoft Entra access token for Event Hubs, with the event hub's name as the address; or put a connection string in the Secret's address")
	}
	host, err := eventHubHost(cfg.Channel)
	if err != nil {
		return nil, fmt.Errorf("an %s provider's channel %w", cfg.Type, err)
	}
	return &azureEventHub{cfg: cfg, resource: "https://" + host + "/" + cfg.Address}, nil
}

// eventHubHost is the host of a namespace given as its name or its host
// name (another cloud's, or a port with it).
func eventHubHost(namespace string) (string, error) {
	if eventHubNamespaceForm.MatchString(namespace) {
		return namespace + eventHubDomain, nil
	}
	u, err := url.Parse("https://" + namespace)
	if namespace == "" || err != nil || u.Host != namespace {
		return "", errors.New("must be the Event Hubs namespace: its name, or its host name")
	}
	return namespace, nil
}

// parseEventHubConnection reads a connection string's host, event hub
// and key. The error says which part is missing, never a value.
func parseEventHubConnection(s string) (host, hub, keyName, key string, err error) {
	parts := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		// The key is base64 and may end in '=': split at the first.
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return "", "", "", "", errors.New("is not a list of name=value parts")
		}
		parts[strings.ToLower(k)] = v
	}
	u, uerr := url.Parse(parts["endpoint"])
	switch {
	case uerr != nil || u.Host == "":
		err = errors.New("has no Endpoint=sb://<namespace host>/")
	case parts["entitypath"] == "" || !eventHubNameForm.MatchString(parts["entitypath"]):
		err = errors.New("has no EntityPath=<event hub> (copy the event hub's connection string, or add it)")
	case parts["sharedaccesskeyname"] == "" || parts["sharedaccesskey"] == "":
		err = errors.New("has no SharedAccessKeyName and SharedAccessKey")
	}
	if err != nil {
		return "", "", "", "", err
	}
	return u.Host, parts["entitypath"], parts["sharedaccesskeyname"], parts["sharedaccesskey"], nil
}

func (n *azureEventHub) Post(ctx context.Context, e events.Event) error {
	body, err := json.Marshal(withoutUserInfo(e))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encoding the event: %w", err)}
	}
	auth := "Bearer " + n.cfg.Token
	if n.key != "" {
		auth = sharedAccessSignature(n.resource, n.keyName, n.key, time.Now().Add(eventHubSASLifetime))
	}
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: n.resource + "/messages?api-version=2014-01", body: body,
		// The type Event Hubs' REST API documents; the body is the
		// event's data as it is.
		contentType: "application/atom+xml;type=entry;charset=utf-8",
		header:      http.Header{"Authorization": {auth}},
	})
}

// sharedAccessSignature is the Authorization value of a request under
// resource, valid until expiry, as Azure Service Bus and Event Hubs
// define it: the string to sign is the URL-encoded resource URI (lower
// case), a newline and the expiry in Unix seconds; the signature its
// HMAC-SHA256 keyed with the key as written (not base64-decoded), in
// base64, URL-encoded.
func sharedAccessSignature(resource, keyName, key string, expiry time.Time) string {
	sr := strings.ToLower(url.QueryEscape(resource))
	se := strconv.FormatInt(expiry.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(sr + "\n" + se))
	sig := url.QueryEscape(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return "SharedAccessSignature sr=" + sr + "&sig=" + sig + "&se=" + se + "&skn=" + url.QueryEscape(keyName)
}
