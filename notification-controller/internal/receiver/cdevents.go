package receiver

import (
	"net/http"
	"regexp"
	"strings"
	"time"
)

// CloudEvents binary-mode headers (CloudEvents HTTP binding 1.0) a CDEvent
// arrives with.
const (
	CESpecVersionHeader = "Ce-Specversion"
	CETypeHeader        = "Ce-Type"
	CEIDHeader          = "Ce-Id"
	CESourceHeader      = "Ce-Source"
)

// cdeventType is dev.cdevents.<subject>.<predicate>.<semver>, the type of
// every CDEvent (CDEvents spec, "type" of the context).
var cdeventType = regexp.MustCompile(`^dev\.cdevents\.[a-z]+\.[a-z]+\.\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// cdevent is the part of a CDEvent the spec requires of every event: its
// context and a subject with an id and content.
type cdevent struct {
	Context *struct {
		Version   string `json:"version"`
		ID        string `json:"id"`
		Source    string `json:"source"`
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
	} `json:"context"`
	Subject *struct {
		ID      string         `json:"id"`
		Content map[string]any `json:"content"`
	} `json:"subject"`
}

// decodeCDEvent checks a CDEvent sent over HTTP in CloudEvents binary mode
// (the ce-* headers, the CDEvent as the body), as Flux does with the
// CDEvents SDK: the headers name a CloudEvent 1.0 of a dev.cdevents type,
// and the body is a CDEvent of that same type with the context and subject
// the spec requires. CDEvents are not signed: the webhook path is the
// secret. It returns the event type, which spec.events filters on.
func decodeCDEvent(header http.Header, body []byte) (string, error) {
	if v := header.Get(CESpecVersionHeader); v != "1.0" {
		return "", payloadErrorf("cdevents", "%s must be 1.0 (a CloudEvent in binary mode), got %q", CESpecVersionHeader, truncate(v, 16))
	}
	typ := header.Get(CETypeHeader)
	if !cdeventType.MatchString(typ) {
		return "", payloadErrorf("cdevents", "%s %q is not a dev.cdevents.<subject>.<predicate>.<version> type", CETypeHeader, truncate(typ, 128))
	}
	if err := required(CEIDHeader, header.Get(CEIDHeader), CESourceHeader, header.Get(CESourceHeader)); err != nil {
		return "", payloadErrorf("cdevents", "%v", err)
	}
	var e cdevent
	if err := decodeObject(body, &e); err != nil {
		return "", payloadErrorf("cdevents", "%v", err)
	}
	if e.Context == nil || e.Subject == nil {
		return "", payloadErrorf("cdevents", "context and subject are required")
	}
	c := e.Context
	if err := required("context.version", c.Version, "context.id", c.ID, "context.source", c.Source,
		"context.type", c.Type, "subject.id", e.Subject.ID); err != nil {
		return "", payloadErrorf("cdevents", "%v", err)
	}
	if e.Subject.Content == nil {
		return "", payloadErrorf("cdevents", "subject.content is required")
	}
	if !strings.EqualFold(c.Type, typ) {
		return "", payloadErrorf("cdevents", "context.type %q is not the %s %q", truncate(c.Type, 128), CETypeHeader, typ)
	}
	if _, err := time.Parse(time.RFC3339Nano, c.Timestamp); err != nil {
		return "", payloadErrorf("cdevents", "context.timestamp is not an RFC 3339 time")
	}
	return typ, nil
}
