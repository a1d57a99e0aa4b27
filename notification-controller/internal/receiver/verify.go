package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"slices"
	"strings"

	notificationv1 "plumb.dev/api/notification/v1"
)

// Headers the Git hosts send.
const (
	GitHubSignature256Header = "X-Hub-Signature-256"
	GitHubSignatureHeader    = "X-Hub-Signature"
	GitHubEventHeader        = "X-GitHub-Event"
	GitLabTokenHeader        = "X-Gitlab-Token"
	GitLabEventHeader        = "X-Gitlab-Event"
	BitbucketEventHeader     = "X-Event-Key"
	GenericSignatureHeader   = "X-Signature"
)

// ErrUnauthorized is a call whose signature or token is missing or wrong.
var ErrUnauthorized = errors.New("unauthorized")

// Verdict is what a verified call asks for.
type Verdict struct {
	// Trigger is true when the resources are to be reconciled.
	Trigger bool
	// Event is the sender's event type, when it names one.
	Event string
	// Note explains a call that triggers nothing (ping, filtered event).
	Note string
	// Claims are a generic-oidc call's verified ID token claims, which
	// spec.resourceFilter reads as claims.
	Claims map[string]any
}

// Call is one webhook call to a Receiver, as Verify sees it.
type Call struct {
	// Type is the Receiver's spec.type, Events its spec.events.
	Type   string
	Events []string
	// Secret holds what the Receiver's Secret holds.
	Secret Credentials
	// OIDCProviders are a generic-oidc Receiver's spec.oidcProviders.
	OIDCProviders []notificationv1.OIDCProvider
	Header        http.Header
	// Body is the whole body, at most MaxBodySize bytes.
	Body []byte
}

// Verifier checks calls. Its zero value checks every type but gcr and
// generic-oidc.
type Verifier struct {
	// IDTokens checks the Google-signed ID tokens of gcr calls; without it
	// they are refused.
	IDTokens *IDTokens
	// OIDC checks the ID tokens of generic-oidc calls; without it they
	// are refused.
	OIDC *OIDCTokens
}

// Verify checks a call against the Receiver's type and Secret and applies
// its event filter. An error wraps ErrUnauthorized when the call is not
// authentic; any other error is a body that is not the sender's payload.
func (v *Verifier) Verify(ctx context.Context, c Call) (Verdict, error) {
	token, header, body := c.Secret.Token, c.Header, c.Body
	switch c.Type {
	case notificationv1.GitHubReceiver:
		if err := verifyGitHub(token, header, body); err != nil {
			return Verdict{}, err
		}
		event := header.Get(GitHubEventHeader)
		if event == "ping" {
			return Verdict{Event: event, Note: "ping"}, nil
		}
		return filter(event, c.Events), nil
	case notificationv1.GitLabReceiver:
		if !equalSecret(header.Get(GitLabTokenHeader), token) {
			return Verdict{}, fmt.Errorf("%w: %s does not match", ErrUnauthorized, GitLabTokenHeader)
		}
		return filter(header.Get(GitLabEventHeader), c.Events), nil
	case notificationv1.BitbucketReceiver:
		if err := verifyHMACHeader(GitHubSignatureHeader, header.Get(GitHubSignatureHeader), token, body); err != nil {
			return Verdict{}, err
		}
		event := header.Get(BitbucketEventHeader)
		if event == "diagnostics:ping" {
			return Verdict{Event: event, Note: "ping"}, nil
		}
		return filter(event, c.Events), nil
	case notificationv1.GenericHMACReceiver:
		if err := verifyHMACHeader(GenericSignatureHeader, header.Get(GenericSignatureHeader), token, body); err != nil {
			return Verdict{}, err
		}
		return Verdict{Trigger: true}, nil
	case notificationv1.GenericReceiver:
		return Verdict{Trigger: true}, nil
	case notificationv1.GenericOIDCReceiver:
		return v.verifyGenericOIDC(ctx, c)
	case notificationv1.HarborReceiver:
		return verifyHarbor(token, header)
	case notificationv1.NexusReceiver:
		return verifyNexus(token, header, body)
	case notificationv1.DockerHubReceiver:
		return decodeDockerHub(body)
	case notificationv1.QuayReceiver:
		return decodeQuay(body)
	case notificationv1.ACRReceiver:
		return decodeACR(body)
	case notificationv1.GCRReceiver:
		if v.IDTokens == nil {
			return Verdict{}, fmt.Errorf("%w: gcr calls cannot be verified: no ID token verifier is configured", ErrUnauthorized)
		}
		return v.verifyGCR(ctx, c.Secret, header, body)
	case notificationv1.CDEventsReceiver:
		event, err := decodeCDEvent(header, body)
		if err != nil {
			return Verdict{}, err
		}
		return filter(event, c.Events), nil
	}
	return Verdict{}, fmt.Errorf("unknown receiver type %q", c.Type)
}

// CanFilter reports whether a receiver type knows the sender's event type,
// so spec.events means something for it. The registries' payloads name an
// action at most, which Flux does not filter on either; a CDEvent's type is
// its ce-type.
func CanFilter(typ string) bool {
	switch typ {
	case notificationv1.GitHubReceiver, notificationv1.GitLabReceiver, notificationv1.BitbucketReceiver,
		notificationv1.CDEventsReceiver:
		return true
	}
	return false
}

// filter triggers when the Receiver lists no events or lists this one
// (case-insensitively).
func filter(event string, events []string) Verdict {
	if len(events) == 0 || slices.ContainsFunc(events, func(e string) bool { return strings.EqualFold(e, event) }) {
		return Verdict{Trigger: true, Event: event}
	}
	return Verdict{Event: event, Note: fmt.Sprintf("event %q is not in spec.events", event)}
}

// verifyGitHub checks X-Hub-Signature-256 (sha256), or when absent the
// older X-Hub-Signature (sha1).
func verifyGitHub(token string, header http.Header, body []byte) error {
	if v := header.Get(GitHubSignature256Header); v != "" {
		algo, _, err := ParseSignature(v)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnauthorized, GitHubSignature256Header, err)
		}
		if algo != "sha256" {
			return fmt.Errorf("%w: %s must be sha256, not %s", ErrUnauthorized, GitHubSignature256Header, algo)
		}
		return verifyHMACHeader(GitHubSignature256Header, v, token, body)
	}
	return verifyHMACHeader(GitHubSignatureHeader, header.Get(GitHubSignatureHeader), token, body)
}

// verifyHMACHeader checks a "<algo>=<hex>" header against the HMAC of body
// keyed with token.
func verifyHMACHeader(name, value, token string, body []byte) error {
	if value == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthorized, name)
	}
	algo, sum, err := ParseSignature(value)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnauthorized, name, err)
	}
	mac := hmac.New(hashFor(algo), []byte(token))
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sum) {
		return fmt.Errorf("%w: the %s signature does not match the body", ErrUnauthorized, name)
	}
	return nil
}

// ParseSignature parses a signature header value "<algo>=<hex>" with algo
// sha1, sha256 or sha512, and checks the digest has that algorithm's length.
func ParseSignature(value string) (algo string, sum []byte, err error) {
	algo, digest, ok := strings.Cut(strings.TrimSpace(value), "=")
	if !ok {
		return "", nil, errors.New(`want "<algorithm>=<hex digest>"`)
	}
	algo = strings.ToLower(algo)
	var size int
	switch algo {
	case "sha1":
		size = sha1.Size
	case "sha256":
		size = sha256.Size
	case "sha512":
		size = sha512.Size
	default:
		return "", nil, fmt.Errorf("unsupported algorithm %q (want sha1, sha256 or sha512)", truncate(algo, 16))
	}
	if len(digest) != 2*size {
		return "", nil, fmt.Errorf("a %s digest has %d hex digits, got %d", algo, 2*size, len(digest))
	}
	sum, err = hex.DecodeString(digest)
	if err != nil {
		return "", nil, errors.New("the digest is not hex")
	}
	return algo, sum, nil
}

func hashFor(algo string) func() hash.Hash {
	switch algo {
	case "sha1":
		return sha1.New
	case "sha512":
		return sha512.New
	}
	return sha256.New
}

// equalSecret compares in constant time, also with respect to the lengths:
// both sides are hashed first.
func equalSecret(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1 && want != ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// WebhookPath returns the path a Receiver is served on:
// /hook/<hex sha256(token + name + namespace)>.
func WebhookPath(token, name, namespace string) string {
	sum := sha256.Sum256([]byte(token + name + namespace))
	return "/hook/" + hex.EncodeToString(sum[:])
}
