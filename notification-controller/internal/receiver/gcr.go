package receiver

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// pubsubPush is the body of a Google Cloud Pub/Sub push delivery.
type pubsubPush struct {
	Message *struct {
		Data      string `json:"data"`
		MessageID string `json:"messageId"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// gcrMessage is what Artifact Registry / Container Registry publish on
// their "gcr" topic, base64 in the message's data.
type gcrMessage struct {
	Action string `json:"action"`
	Digest string `json:"digest"`
	Tag    string `json:"tag"`
}

// verifyGCR checks a Pub/Sub push of a registry notification: the
// Authorization bearer token must be an ID token signed by Google for the
// Secret's audience and service account (email), and the body a push
// whose data decodes to a registry message (INSERT or DELETE).
func (v *Verifier) verifyGCR(ctx context.Context, cred Credentials, header http.Header, body []byte) (Verdict, error) {
	bearer, ok := strings.CutPrefix(header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(bearer) == "" {
		return Verdict{}, fmt.Errorf("%w: no Authorization: Bearer ID token", ErrUnauthorized)
	}
	if err := v.IDTokens.Verify(ctx, strings.TrimSpace(bearer), cred.Audience, cred.Email); err != nil {
		return Verdict{}, fmt.Errorf("%w: %v", ErrUnauthorized, err)
	}
	var p pubsubPush
	if err := decodeObject(body, &p); err != nil {
		return Verdict{}, payloadErrorf("gcr", "%v", err)
	}
	if p.Message == nil {
		return Verdict{}, payloadErrorf("gcr", "message is required")
	}
	if err := required("message.data", p.Message.Data, "message.messageId", p.Message.MessageID); err != nil {
		return Verdict{}, payloadErrorf("gcr", "%v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(p.Message.Data)
	if err != nil {
		return Verdict{}, payloadErrorf("gcr", "message.data is not base64")
	}
	var m gcrMessage
	if err := decodeObject(raw, &m); err != nil {
		return Verdict{}, payloadErrorf("gcr", "message.data: %v", err)
	}
	if err := required("message.data action", m.Action); err != nil {
		return Verdict{}, payloadErrorf("gcr", "%v", err)
	}
	if m.Digest == "" && m.Tag == "" {
		return Verdict{}, payloadErrorf("gcr", "message.data names neither a digest nor a tag")
	}
	return Verdict{Trigger: true, Event: m.Action}, nil
}
