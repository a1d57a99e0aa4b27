package receiver

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

// Payloads as the services document them (trimmed of fields not read).
const (
	harborPush     = `{"type":"PUSH_ARTIFACT","occur_at":1680501893,"operator":"harbor-jobservice","event_data":{"resources":[{"digest":"sha256:954b378c375d852eb3c63ab88978f640b4348b01c1b3456a024a81536dafbbf4","tag":"v1.0.0","resource_url":"harbor.example.com/library/app:v1.0.0"}],"repository":{"date_created":1680501893,"name":"app","namespace":"library","repo_full_name":"library/app","repo_type":"private"}}}`
	nexusComponent = `{"timestamp":"2016-11-10T23:57:49.664+0000","nodeId":"52905B51-085CCABB-CEBBEAAD-16795588-FC927D93","initiator":"admin/127.0.0.1","repositoryName":"docker-hosted","action":"CREATED","component":{"id":"08909bf0c86cf6c9600aade89e1c5e25","componentId":"CCB8DC9B4C8E...","format":"docker","name":"app","version":"1.0.0"}}`
	dockerHubPush  = `{"callback_url":"https://registry.hub.docker.com/u/svendowideit/testhook/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/","push_data":{"pushed_at":1417566161,"pusher":"trustedbuilder","tag":"latest"},"repository":{"comment_count":0,"date_created":1417494799,"description":"","is_official":false,"is_private":true,"name":"testhook","namespace":"svendowideit","owner":"svendowideit","repo_name":"svendowideit/testhook","repo_url":"https://registry.hub.docker.com/u/svendowideit/testhook/","star_count":0,"status":"Active"}}`
	quayPush       = `{"repository":"mynamespace/repository","namespace":"mynamespace","name":"repository","docker_url":"quay.io/mynamespace/repository","homepage":"https://quay.io/repository/mynamespace/repository","updated_tags":["latest"]}`
	acrPush        = `{"id":"cb8c3971-9adc-488b-xxxx-43cbb4974ff5","timestamp":"2017-11-17T16:52:01.343145347Z","action":"push","target":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","size":524,"digest":"sha256:xxxxd5c8786bb9e621a45ece0dbxxxx1cdc624ad20da9fe62e9d25490f33xxxx","length":524,"repository":"hello-world","tag":"v1"},"request":{"id":"3cbb6949-7549-4fa1-xxxx-a6d5451dffc7","host":"myregistry.azurecr.io","method":"PUT","useragent":"docker/17.09.0-ce"}}`
	cdeventBody    = `{"context":{"version":"0.4.1","id":"271069a8-fc18-44f1-b38f-9d70a1695819","source":"/event/source/123","type":"dev.cdevents.artifact.published.0.2.0","timestamp":"2023-03-20T14:27:05.315384Z"},"subject":{"id":"pkg:oci/app@sha256%3A954b378c375d852eb3c63ab88978f640b4348b01c1b3456a024a81536dafbbf4","source":"/event/source/123","type":"artifact","content":{}}}`
)

func nexusSig(key, body string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func ceHeaders(typ string) http.Header {
	return headers("Ce-Specversion", "1.0", "Ce-Type", typ, "Ce-Id", "271069a8-fc18-44f1-b38f-9d70a1695819", "Ce-Source", "/event/source/123", "Content-Type", "application/json")
}

func TestRegistriesAndCDEvents(t *testing.T) {
	const artifactPublished = "dev.cdevents.artifact.published.0.2.0"
	for _, tc := range []struct {
		name   string
		typ    string
		events []string
		header http.Header
		body   string
		// want: "" triggers, "unauthorized" is a 401, "payload" a 400, any
		// other value the Note of a call that triggers nothing.
		want  string
		event string
	}{
		{name: "harbor", typ: notificationv1.HarborReceiver, header: headers("Authorization", token), body: harborPush},
		{name: "harbor wrong token", typ: notificationv1.HarborReceiver, header: headers("Authorization", "Bearer "+token), body: harborPush, want: "unauthorized"},
		{name: "harbor no token", typ: notificationv1.HarborReceiver, header: headers(), body: harborPush, want: "unauthorized"},

		{name: "nexus", typ: notificationv1.NexusReceiver, header: headers("X-Nexus-Webhook-Signature", nexusSig(token, nexusComponent)), body: nexusComponent, event: "CREATED"},
		{name: "nexus other key", typ: notificationv1.NexusReceiver, header: headers("X-Nexus-Webhook-Signature", nexusSig("other", nexusComponent)), body: nexusComponent, want: "unauthorized"},
		{name: "nexus sha1= prefix is not Nexus's form", typ: notificationv1.NexusReceiver, header: headers("X-Nexus-Webhook-Signature", "sha1="+nexusSig(token, nexusComponent)), body: nexusComponent, want: "unauthorized"},
		{name: "nexus unsigned", typ: notificationv1.NexusReceiver, header: headers(), body: nexusComponent, want: "unauthorized"},
		{name: "nexus signed but no action", typ: notificationv1.NexusReceiver, header: headers("X-Nexus-Webhook-Signature", nexusSig(token, `{"repositoryName":"x"}`)), body: `{"repositoryName":"x"}`, want: "payload"},

		{name: "dockerhub", typ: notificationv1.DockerHubReceiver, header: headers(), body: dockerHubPush, event: "push"},
		{name: "dockerhub without tag", typ: notificationv1.DockerHubReceiver, body: `{"push_data":{"pusher":"x"},"repository":{"repo_name":"a/b"}}`, want: "payload"},
		{name: "dockerhub not a push", typ: notificationv1.DockerHubReceiver, body: quayPush, want: "payload"},
		{name: "dockerhub two objects", typ: notificationv1.DockerHubReceiver, body: dockerHubPush + dockerHubPush, want: "payload"},
		{name: "dockerhub array", typ: notificationv1.DockerHubReceiver, body: "[" + dockerHubPush + "]", want: "payload"},
		{name: "dockerhub wrong type", typ: notificationv1.DockerHubReceiver, body: `{"push_data":{"tag":1},"repository":{"repo_name":"a/b"}}`, want: "payload"},

		{name: "quay", typ: notificationv1.QuayReceiver, body: quayPush, event: "push"},
		{name: "quay without updated_tags", typ: notificationv1.QuayReceiver, body: `{"docker_url":"quay.io/a/b"}`, want: "payload"},
		{name: "quay empty body", typ: notificationv1.QuayReceiver, body: ``, want: "payload"},

		{name: "acr", typ: notificationv1.ACRReceiver, body: acrPush, event: "push"},
		{name: "acr without repository", typ: notificationv1.ACRReceiver, body: `{"action":"push","target":{"tag":"v1"}}`, want: "payload"},
		{name: "acr docker hub payload", typ: notificationv1.ACRReceiver, body: dockerHubPush, want: "payload"},

		{name: "cdevents", typ: notificationv1.CDEventsReceiver, header: ceHeaders(artifactPublished), body: cdeventBody, event: artifactPublished},
		{name: "cdevents listed type", typ: notificationv1.CDEventsReceiver, events: []string{artifactPublished}, header: ceHeaders(artifactPublished), body: cdeventBody, event: artifactPublished},
		{name: "cdevents filtered type", typ: notificationv1.CDEventsReceiver, events: []string{"dev.cdevents.pipelinerun.finished.0.2.0"}, header: ceHeaders(artifactPublished), body: cdeventBody,
			want: `event "dev.cdevents.artifact.published.0.2.0" is not in spec.events`, event: artifactPublished},
		{name: "cdevents header type differs from the body's", typ: notificationv1.CDEventsReceiver, header: ceHeaders("dev.cdevents.artifact.packaged.0.2.0"), body: cdeventBody, want: "payload"},
		{name: "cdevents not a cdevents type", typ: notificationv1.CDEventsReceiver, header: ceHeaders("com.example.push"), body: cdeventBody, want: "payload"},
		{name: "cdevents structured mode", typ: notificationv1.CDEventsReceiver, header: headers("Content-Type", "application/cloudevents+json"), body: cdeventBody, want: "payload"},
		{name: "cdevents without subject", typ: notificationv1.CDEventsReceiver, header: ceHeaders(artifactPublished), body: `{"context":{"version":"0.4.1","id":"1","source":"/s","type":"` + artifactPublished + `","timestamp":"2023-03-20T14:27:05Z"}}`, want: "payload"},
		{name: "cdevents bad timestamp", typ: notificationv1.CDEventsReceiver, header: ceHeaders(artifactPublished), body: `{"context":{"version":"0.4.1","id":"1","source":"/s","type":"` + artifactPublished + `","timestamp":"yesterday"},"subject":{"id":"x","content":{}}}`, want: "payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.header == nil {
				tc.header = headers()
			}
			v, err := verify(tc.typ, token, tc.events, tc.header, []byte(tc.body))
			switch tc.want {
			case "unauthorized":
				g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
				g.Expect(err.Error()).NotTo(ContainSubstring(token))
			case "payload":
				g.Expect(errors.Is(err, ErrPayload)).To(BeTrue(), "error: %v", err)
				g.Expect(errors.Is(err, ErrUnauthorized)).To(BeFalse())
			case "":
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(v.Trigger).To(BeTrue())
				g.Expect(v.Event).To(Equal(tc.event))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(v.Trigger).To(BeFalse())
				g.Expect(v.Note).To(Equal(tc.want))
			}
		})
	}
}

// The gcr payload's parser is reached only with a valid ID token (see
// idtoken_test.go); without a verifier every gcr call is refused.
func TestGCRWithoutAnIDTokenVerifierIsRefused(t *testing.T) {
	g := NewWithT(t)
	_, err := verify(notificationv1.GCRReceiver, token, nil, headers("Authorization", "Bearer x.y.z"), []byte(pubsubBody(`{"action":"INSERT","tag":"gcr.io/p/app:v1"}`)))
	g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "error: %v", err)
}

func pubsubBody(data string) string {
	return `{"message":{"attributes":{},"data":"` + base64.StdEncoding.EncodeToString([]byte(data)) +
		`","messageId":"2070443601311540","message_id":"2070443601311540","publishTime":"2021-02-26T19:13:55.749Z","publish_time":"2021-02-26T19:13:55.749Z"},"subscription":"projects/myproject/subscriptions/mysubscription"}`
}
