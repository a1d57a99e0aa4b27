package receiver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Headers the registries send.
const (
	// HarborAuthHeader carries the "Auth Header" of a Harbor webhook
	// policy verbatim: the Receiver's token.
	HarborAuthHeader = "Authorization"
	// NexusSignatureHeader is the hex HMAC-SHA1 of the body keyed with the
	// webhook's secret key (Nexus Repository "Secret Key").
	NexusSignatureHeader = "X-Nexus-Webhook-Signature"
)

// ErrPayload is a body that is not the sender's webhook payload (400).
var ErrPayload = errors.New("not a valid payload")

// payloadErrorf is an ErrPayload of a sender's payload (source names the
// sender: "quay", "cdevents"), saying what is wrong with it.
func payloadErrorf(source, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrPayload, source, fmt.Sprintf(format, args...))
}

// verifyHarbor checks the Authorization header equals the token: Harbor
// sends the policy's auth header as it was typed and signs nothing. The
// body (whose shape varies by event) is not needed to trigger.
func verifyHarbor(token string, header http.Header) (Verdict, error) {
	if !equalSecret(header.Get(HarborAuthHeader), token) {
		return Verdict{}, fmt.Errorf("%w: %s does not match", ErrUnauthorized, HarborAuthHeader)
	}
	return Verdict{Trigger: true}, nil
}

// nexusPayload is what a Nexus repository or component webhook always
// carries; the rest depends on the event.
type nexusPayload struct {
	Action string `json:"action"`
}

// verifyNexus checks X-Nexus-Webhook-Signature, the hex HMAC-SHA1 of the
// body keyed with the token (no "sha1=" prefix), then that the body is a
// Nexus payload with an action (CREATED, UPDATED, DELETED).
func verifyNexus(token string, header http.Header, body []byte) (Verdict, error) {
	got := strings.TrimSpace(header.Get(NexusSignatureHeader))
	if got == "" {
		return Verdict{}, fmt.Errorf("%w: no %s header", ErrUnauthorized, NexusSignatureHeader)
	}
	sum, err := hex.DecodeString(got)
	if err != nil || len(sum) != sha1.Size {
		return Verdict{}, fmt.Errorf("%w: %s is not a hex SHA-1 digest", ErrUnauthorized, NexusSignatureHeader)
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sum) {
		return Verdict{}, fmt.Errorf("%w: the %s signature does not match the body", ErrUnauthorized, NexusSignatureHeader)
	}
	var p nexusPayload
	if err := decodeObject(body, &p); err != nil {
		return Verdict{}, payloadErrorf("nexus", "%v", err)
	}
	if err := required("action", p.Action); err != nil {
		return Verdict{}, payloadErrorf("nexus", "%v", err)
	}
	return Verdict{Trigger: true, Event: p.Action}, nil
}

// dockerHubPayload is the part of a Docker Hub repository webhook that
// says what was pushed.
type dockerHubPayload struct {
	PushData *struct {
		Tag string `json:"tag"`
	} `json:"push_data"`
	Repository *struct {
		RepoName string `json:"repo_name"`
	} `json:"repository"`
}

// decodeDockerHub accepts a Docker Hub push webhook: Docker Hub signs
// nothing, so the secret is the webhook URL (it holds a hash of the
// token) and the body must be a push.
func decodeDockerHub(body []byte) (Verdict, error) {
	var p dockerHubPayload
	if err := decodeObject(body, &p); err != nil {
		return Verdict{}, payloadErrorf("dockerhub", "%v", err)
	}
	if p.PushData == nil || p.Repository == nil {
		return Verdict{}, payloadErrorf("dockerhub", "push_data and repository are required")
	}
	if err := required("push_data.tag", p.PushData.Tag, "repository.repo_name", p.Repository.RepoName); err != nil {
		return Verdict{}, payloadErrorf("dockerhub", "%v", err)
	}
	return Verdict{Trigger: true, Event: "push"}, nil
}

// quayPayload is a Quay "Push to repository" notification.
type quayPayload struct {
	DockerURL   string    `json:"docker_url"`
	UpdatedTags *[]string `json:"updated_tags"`
}

// decodeQuay accepts a Quay repository push notification; like Docker
// Hub, Quay signs nothing and the webhook URL is the secret.
func decodeQuay(body []byte) (Verdict, error) {
	var p quayPayload
	if err := decodeObject(body, &p); err != nil {
		return Verdict{}, payloadErrorf("quay", "%v", err)
	}
	if err := required("docker_url", p.DockerURL); err != nil {
		return Verdict{}, payloadErrorf("quay", "%v", err)
	}
	if p.UpdatedTags == nil {
		return Verdict{}, payloadErrorf("quay", "updated_tags is required")
	}
	return Verdict{Trigger: true, Event: "push"}, nil
}

// acrPayload is an Azure Container Registry webhook event.
type acrPayload struct {
	Action string `json:"action"`
	Target *struct {
		Repository string `json:"repository"`
	} `json:"target"`
}

// decodeACR accepts an Azure Container Registry webhook (push, delete,
// chart_push, ...); ACR sends custom headers the user chose, but signs
// nothing, so the webhook URL is the secret.
func decodeACR(body []byte) (Verdict, error) {
	var p acrPayload
	if err := decodeObject(body, &p); err != nil {
		return Verdict{}, payloadErrorf("acr", "%v", err)
	}
	if p.Target == nil {
		return Verdict{}, payloadErrorf("acr", "target is required")
	}
	if err := required("action", p.Action, "target.repository", p.Target.Repository); err != nil {
		return Verdict{}, payloadErrorf("acr", "%v", err)
	}
	return Verdict{Trigger: true, Event: p.Action}, nil
}

// decodeObject decodes body, which must be exactly one JSON object, into
// v. Fields v does not name are ignored: the services add fields over time
// and their payloads differ by event. The body is already bounded by
// MaxBodySize.
func decodeObject(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return errors.New("the body is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not the expected JSON: %s", truncate(err.Error(), 200))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("the body has data after its JSON object")
	}
	return nil
}

// required checks that each named value (name, value pairs) is not empty.
func required(kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if strings.TrimSpace(kv[i+1]) == "" {
			return fmt.Errorf("%s is required", kv[i])
		}
	}
	return nil
}
