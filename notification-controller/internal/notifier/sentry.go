package notifier

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"plumb.dev/pkg/events"
)

// Sentry's limits on tags and names, in characters.
const (
	sentryTagKeyMax   = 32
	sentryTagValueMax = 200
	sentryNameMax     = 200 // a transaction's name
	sentryMessageMax  = 8192
)

// sentryDSN is what a project's DSN, https://<public key>@<host>/<project
// id>, says: where its envelope endpoint is and the key to authenticate
// with.
type sentryDSN struct {
	envelope string // https://<host>[/<prefix>]/api/<project id>/envelope/
	key      string // the public key (and the legacy secret key, if any)
	secret   string
}

func parseSentryDSN(address string) (sentryDSN, error) {
	bad := errors.New("the sentry address must be the project's DSN, https://<public key>@<host>/<project id>")
	u, err := url.Parse(address)
	if err != nil || u.User == nil || u.User.Username() == "" || u.Host == "" {
		return sentryDSN{}, bad
	}
	path := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 || i == len(path)-1 {
		return sentryDSN{}, bad
	}
	prefix, project := path[:i], path[i+1:]
	secret, _ := u.User.Password()
	endpoint := url.URL{Scheme: u.Scheme, Host: u.Host, Path: prefix + "/api/" + project + "/envelope/"}
	return sentryDSN{envelope: endpoint.String(), key: u.User.Username(), secret: secret}, nil
}

// sentryNotifier sends an error event as a Sentry error event (one issue
// per object and reason: the fingerprint), and an info event as a
// transaction, as Flux does: transactions are counted and charted in
// Sentry's performance views and open no issue. Both go to the project's
// envelope endpoint, with an event_id derived from the event's id so that
// Sentry drops the second copy of a delivery retried after it had arrived.
// spec.channel, if set, is the Sentry environment.
type sentryNotifier struct {
	cfg Config
	dsn sentryDSN
}

func newSentry(cfg Config) (Notifier, error) {
	dsn, err := parseSentryDSN(cfg.Address)
	if err != nil {
		return nil, err
	}
	return &sentryNotifier{cfg: cfg, dsn: dsn}, nil
}

func (n *sentryNotifier) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	item, itemType := sentryEventOf(e, n.cfg.Channel), "event"
	if e.Severity != events.SeverityError {
		item, itemType = sentryTransactionOf(e, n.cfg.Channel), "transaction"
	}
	payload, err := json.Marshal(item)
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encoding the sentry event: %w", err)}
	}
	// An envelope: its header, then one item's header and payload, a line
	// each.
	var body bytes.Buffer
	for _, v := range []any{
		map[string]string{"event_id": item["event_id"].(string), "sent_at": time.Now().UTC().Format(time.RFC3339)},
		map[string]any{"type": itemType, "length": len(payload), "content_type": "application/json"},
	} {
		line, _ := json.Marshal(v)
		body.Write(line)
		body.WriteByte('\n')
	}
	body.Write(payload)
	body.WriteByte('\n')
	auth := "Sentry sentry_version=7, sentry_client=plumb-notification-controller/1.0, sentry_key=" + n.dsn.key
	if n.dsn.secret != "" {
		auth += ", sentry_secret=" + n.dsn.secret
	}
	return n.cfg.send(ctx, request{
		method: http.MethodPost, url: n.dsn.envelope, body: body.Bytes(), contentType: "application/x-sentry-envelope",
		header: http.Header{"X-Sentry-Auth": {auth}},
	})
}

// sentryIDs derives the event's Sentry ids from its id (from its content
// when it has none, so that distinct events never share one): event_id
// (32 hex digits), and for a transaction its trace_id (32) and span_id
// (16).
func sentryIDs(e events.Event) (eventID, traceID, spanID string) {
	id := e.ID
	if id == "" {
		content, _ := json.Marshal(e)
		id = string(content)
	}
	ids := sha256.Sum256([]byte("plumb-sentry:" + id))
	span := sha256.Sum256([]byte("plumb-sentry-span:" + id))
	h := hex.EncodeToString(ids[:])
	return h[:32], h[32:], hex.EncodeToString(span[:8])
}

// sentryCommon is what errors and transactions share: time, tags (what
// identifies the object and the news), extra (what describes it).
func sentryCommon(e events.Event, environment string) map[string]any {
	o := e.InvolvedObject
	tags := map[string]string{}
	for _, k := range stableMetadataKeys(e) {
		tags[sentryTagKey(k)] = sentryTagValue(e.Metadata[k])
	}
	for k, v := range map[string]string{
		"kind": o.Kind, "namespace": o.Namespace, "name": o.Name,
		"reason": e.Reason, "reporting_controller": e.ReportingController,
	} {
		if v != "" {
			tags[k] = sentryTagValue(v)
		}
	}
	extra := map[string]string{}
	for _, f := range facts(e) {
		extra[f.Title] = f.Value
	}
	eventID, _, _ := sentryIDs(e)
	m := map[string]any{
		"event_id": eventID,
		"platform": "other",
		"logger":   "plumb",
		"tags":     tags,
		"extra":    extra,
	}
	if e.ReportingController != "" {
		m["server_name"] = e.ReportingController
	}
	if environment != "" {
		m["environment"] = environment
	}
	ts := e.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	m["timestamp"] = ts.UTC().Format(time.RFC3339Nano)
	return m
}

func sentryEventOf(e events.Event, environment string) map[string]any {
	m := sentryCommon(e, environment)
	m["level"] = "error"
	m["message"] = map[string]string{"formatted": clipRunes(e.Message, sentryMessageMax)}
	m["transaction"] = clipRunes(objectTitle(e), sentryNameMax)
	m["fingerprint"] = []string{"plumb", objectTitle(e), e.Reason}
	return m
}

func sentryTransactionOf(e events.Event, environment string) map[string]any {
	m := sentryCommon(e, environment)
	_, traceID, spanID := sentryIDs(e)
	m["type"] = "transaction"
	m["transaction"] = clipRunes(objectTitle(e)+": "+e.Reason, sentryNameMax)
	m["start_timestamp"] = m["timestamp"]
	m["contexts"] = map[string]any{"trace": map[string]string{
		"trace_id":    traceID,
		"span_id":     spanID,
		"op":          "plumb.event",
		"status":      "ok",
		"description": clipRunes(e.Message, sentryMessageMax),
	}}
	m["spans"] = []any{}
	return m
}

// sentryTagKey keeps the characters Sentry allows in a tag key (letters,
// digits, _ . : -), up to its length.
func sentryTagKey(k string) string {
	b := []byte(k)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:-", c) >= 0) {
			b[i] = '_'
		}
	}
	return clipRunes(string(b), sentryTagKeyMax)
}

// sentryTagValue is v on one line (Sentry refuses newlines in tag
// values), up to its length.
func sentryTagValue(v string) string {
	return clipRunes(strings.ReplaceAll(v, "\n", " "), sentryTagValueMax)
}
