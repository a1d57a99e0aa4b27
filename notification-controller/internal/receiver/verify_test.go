package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

const token = "s3cret-token"

func mac(h func() hash.Hash, algo string, body []byte) string {
	m := hmac.New(h, []byte(token))
	m.Write(body)
	return algo + "=" + hex.EncodeToString(m.Sum(nil))
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// verify checks a call with the Verifier's zero value (no gcr).
func verify(typ, token string, events []string, header http.Header, body []byte) (Verdict, error) {
	return (&Verifier{}).Verify(context.Background(), Call{Type: typ, Events: events, Secret: Credentials{Token: token}, Header: header, Body: body})
}

func TestVerify(t *testing.T) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	for _, tc := range []struct {
		name    string
		typ     string
		events  []string
		header  http.Header
		trigger bool
		unauth  bool
		note    string
	}{
		{name: "github sha256", typ: notificationv1.GitHubReceiver, header: headers("X-Hub-Signature-256", mac(sha256.New, "sha256", body), "X-GitHub-Event", "push"), trigger: true},
		{name: "github sha1 fallback", typ: notificationv1.GitHubReceiver, header: headers("X-Hub-Signature", mac(sha1.New, "sha1", body), "X-GitHub-Event", "push"), trigger: true},
		{name: "github sha256 header wins over a good sha1", typ: notificationv1.GitHubReceiver, header: headers("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64), "X-Hub-Signature", mac(sha1.New, "sha1", body)), unauth: true},
		{name: "github sha256 header with sha1", typ: notificationv1.GitHubReceiver, header: headers("X-Hub-Signature-256", mac(sha1.New, "sha1", body)), unauth: true},
		{name: "github unsigned", typ: notificationv1.GitHubReceiver, header: headers("X-GitHub-Event", "push"), unauth: true},
		{name: "github ping", typ: notificationv1.GitHubReceiver, events: []string{"push"}, header: headers("X-Hub-Signature-256", mac(sha256.New, "sha256", body), "X-GitHub-Event", "ping"), note: "ping"},
		{name: "github unsigned ping", typ: notificationv1.GitHubReceiver, header: headers("X-GitHub-Event", "ping"), unauth: true},
		{name: "github filtered event", typ: notificationv1.GitHubReceiver, events: []string{"push"}, header: headers("X-Hub-Signature-256", mac(sha256.New, "sha256", body), "X-GitHub-Event", "issues"), note: `event "issues" is not in spec.events`},
		{name: "github listed event any case", typ: notificationv1.GitHubReceiver, events: []string{"Push"}, header: headers("X-Hub-Signature-256", mac(sha256.New, "sha256", body), "X-GitHub-Event", "push"), trigger: true},
		{name: "gitlab", typ: notificationv1.GitLabReceiver, events: []string{"Push Hook"}, header: headers("X-Gitlab-Token", token, "X-Gitlab-Event", "Push Hook"), trigger: true},
		{name: "gitlab wrong token", typ: notificationv1.GitLabReceiver, header: headers("X-Gitlab-Token", token+"x"), unauth: true},
		{name: "gitlab no token", typ: notificationv1.GitLabReceiver, header: headers(), unauth: true},
		{name: "bitbucket sha256", typ: notificationv1.BitbucketReceiver, header: headers("X-Hub-Signature", mac(sha256.New, "sha256", body), "X-Event-Key", "repo:refs_changed"), trigger: true},
		{name: "bitbucket ping", typ: notificationv1.BitbucketReceiver, header: headers("X-Hub-Signature", mac(sha256.New, "sha256", body), "X-Event-Key", "diagnostics:ping"), note: "ping"},
		{name: "bitbucket bad", typ: notificationv1.BitbucketReceiver, header: headers("X-Hub-Signature", mac(sha256.New, "sha256", []byte("x"))), unauth: true},
		{name: "generic-hmac sha1", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", mac(sha1.New, "sha1", body)), trigger: true},
		{name: "generic-hmac sha256", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", mac(sha256.New, "sha256", body)), trigger: true},
		{name: "generic-hmac sha512", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", mac(sha512.New, "sha512", body)), trigger: true},
		{name: "generic-hmac upper-case algorithm", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", strings.Replace(mac(sha512.New, "sha512", body), "sha512", "SHA512", 1)), trigger: true},
		{name: "generic-hmac md5", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", "md5=00112233445566778899aabbccddeeff"), unauth: true},
		{name: "generic-hmac truncated", typ: notificationv1.GenericHMACReceiver, header: headers("X-Signature", mac(sha256.New, "sha256", body)[:20]), unauth: true},
		{name: "generic", typ: notificationv1.GenericReceiver, header: headers(), trigger: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := verify(tc.typ, token, tc.events, tc.header, body)
			if tc.unauth {
				g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
				g.Expect(err.Error()).NotTo(ContainSubstring(token))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Trigger).To(Equal(tc.trigger))
			g.Expect(v.Note).To(Equal(tc.note))
		})
	}
}

func TestParseSignature(t *testing.T) {
	for _, tc := range []struct {
		in, algo, err string
	}{
		{in: "sha1=" + strings.Repeat("ab", 20), algo: "sha1"},
		{in: "sha256=" + strings.Repeat("ab", 32), algo: "sha256"},
		{in: " sha512=" + strings.Repeat("AB", 64) + " ", algo: "sha512"},
		{in: "sha256", err: "want"},
		{in: "sha384=" + strings.Repeat("ab", 48), err: "unsupported algorithm"},
		{in: "sha256=" + strings.Repeat("ab", 31), err: "64 hex digits"},
		{in: "sha256=" + strings.Repeat("zz", 32), err: "not hex"},
		{in: "", err: "want"},
	} {
		algo, sum, err := ParseSignature(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSignature(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || algo != tc.algo || len(sum) == 0 {
			t.Errorf("ParseSignature(%q) = %q, %x, %v", tc.in, algo, sum, err)
		}
	}
}

func TestWebhookPath(t *testing.T) {
	g := NewWithT(t)
	sum := sha256.Sum256([]byte("tokennamens"))
	g.Expect(WebhookPath("token", "name", "ns")).To(Equal("/hook/" + hex.EncodeToString(sum[:])))
	g.Expect(WebhookPath("token", "name", "ns")).NotTo(Equal(WebhookPath("token", "name", "other")))
}

// FuzzParseSignature: the parser of the untrusted signature headers never
// panics, and what it accepts has the digest length of its algorithm.
func FuzzParseSignature(f *testing.F) {
	for _, seed := range []string{
		"sha1=" + strings.Repeat("ab", 20),
		"sha256=" + strings.Repeat("01", 32),
		"SHA512=" + strings.Repeat("ff", 64),
		"sha256=", "=", "", "sha256==", "md5=00", "sha256=" + strings.Repeat("g", 64),
	} {
		f.Add(seed)
	}
	sizes := map[string]int{"sha1": sha1.Size, "sha256": sha256.Size, "sha512": sha512.Size}
	f.Fuzz(func(t *testing.T, in string) {
		algo, sum, err := ParseSignature(in)
		if err != nil {
			return
		}
		if n, ok := sizes[algo]; !ok || len(sum) != n {
			t.Fatalf("ParseSignature(%q) accepted %q with %d bytes", in, algo, len(sum))
		}
	})
}

// FuzzVerify feeds every receiver type arbitrary headers and bodies: no
// panic; nothing but the types whose URL is their only secret accepts a
// call that was not signed with (or does not carry) the token, and those
// accept only a JSON object.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	const other = "a different token"
	f.Add(notificationv1.GitHubReceiver, mac(sha256.New, "sha256", body), "push", body)
	f.Add(notificationv1.GitHubReceiver, "sha1="+strings.Repeat("0", 40), "ping", body)
	f.Add(notificationv1.GitLabReceiver, token, "Push Hook", body)
	f.Add(notificationv1.BitbucketReceiver, mac(sha256.New, "sha256", body), "repo:refs_changed", body)
	f.Add(notificationv1.GenericHMACReceiver, mac(sha512.New, "sha512", body), "", []byte{})
	f.Add(notificationv1.HarborReceiver, other, "", []byte(harborPush))
	f.Add(notificationv1.NexusReceiver, nexusSig(other, nexusComponent), "", []byte(nexusComponent))
	f.Add(notificationv1.DockerHubReceiver, "", "", []byte(dockerHubPush))
	f.Add(notificationv1.QuayReceiver, "", "", []byte(quayPush))
	f.Add(notificationv1.ACRReceiver, "", "", []byte(acrPush))
	f.Add(notificationv1.GCRReceiver, "Bearer x.y.z", "", []byte(pubsubBody(`{"action":"INSERT","tag":"t"}`)))
	f.Add(notificationv1.CDEventsReceiver, "", "dev.cdevents.artifact.published.0.2.0", []byte(cdeventBody))
	f.Add("unknown", "x", "y", []byte("z"))
	f.Fuzz(func(t *testing.T, typ, signature, event string, body []byte) {
		h := headers(
			GitHubSignature256Header, signature,
			GitHubSignatureHeader, signature,
			GitHubEventHeader, event,
			GitLabTokenHeader, signature,
			GitLabEventHeader, event,
			BitbucketEventHeader, event,
			GenericSignatureHeader, signature,
			HarborAuthHeader, signature,
			NexusSignatureHeader, signature,
			CESpecVersionHeader, "1.0",
			CETypeHeader, event,
			CEIDHeader, "1",
			CESourceHeader, "/s",
		)
		v, err := verify(typ, other, nil, h, body)
		if err != nil {
			return
		}
		switch typ {
		case notificationv1.GenericReceiver:
			return
		case notificationv1.DockerHubReceiver, notificationv1.QuayReceiver, notificationv1.ACRReceiver, notificationv1.CDEventsReceiver:
			if trimmed := strings.TrimSpace(string(body)); !strings.HasPrefix(trimmed, "{") || !strings.HasSuffix(trimmed, "}") {
				t.Fatalf("%s accepted a body that is not a JSON object: %q", typ, body)
			}
			return
		case notificationv1.GitLabReceiver, notificationv1.HarborReceiver:
			if signature == other {
				return // the fuzzer guessed the token itself
			}
		case notificationv1.NexusReceiver:
			if strings.EqualFold(strings.TrimSpace(signature), nexusSig(other, string(body))) {
				return
			}
		}
		// Only a correct signature passes; the fuzzer cannot forge one for
		// this key, so whatever passed must be signed with it.
		for _, algo := range []struct {
			name string
			h    func() hash.Hash
		}{{"sha1", sha1.New}, {"sha256", sha256.New}, {"sha512", sha512.New}} {
			m := hmac.New(algo.h, []byte(other))
			m.Write(body)
			if strings.EqualFold(strings.TrimSpace(signature), algo.name+"="+hex.EncodeToString(m.Sum(nil))) {
				return
			}
		}
		t.Fatalf("%s accepted an unsigned call: %+v", typ, v)
	})
}
