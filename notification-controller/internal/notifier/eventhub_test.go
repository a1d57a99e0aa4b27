package notifier

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// --- Azure Event Hubs' HTTPS send: POST /<hub>/messages?api-version=2014-01
// on the namespace's host, the body the event's data, authorized by a
// shared access signature of a policy's key or by a bearer token; 201
// with no body.

const (
	testHub     = "plumb-events"
	testKeyName = "send-only"
	// testSASKey is written as Azure gives keys, base64 with padding: the
	// connection string's parser must keep its '='.
	testSASKey    = "c2VjcmV0LWtleS1vZi1hLXBvbGljeQ=="
	testEntraJWT  = "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJodHRwczovL2V2ZW50aHVicy5henVyZS5uZXQifQ.c2ln"
	eventHubsType = "application/atom+xml;type=entry;charset=utf-8"
)

// eventHubService plays an event hub with one shared access policy and
// one valid Entra token. It checks a signature as the service does: the
// policy named, not expired, granting a resource that contains the
// request's, and the HMAC of its own sr and se under the policy's key.
func eventHubService(r *http.Request, body []byte) (int, any, any) {
	if r.Method != http.MethodPost || r.URL.Path != "/"+testHub+"/messages" {
		return http.StatusNotFound, nil, nil
	}
	if r.URL.Query().Get("api-version") != "2014-01" || r.Header.Get("Content-Type") != eventHubsType {
		return http.StatusBadRequest, nil, nil
	}
	auth := r.Header.Get("Authorization")
	if !(auth == "Bearer "+testEntraJWT || validSAS(auth, "https://"+r.Host+"/"+testHub)) {
		return http.StatusUnauthorized, nil, nil
	}
	var e events.Event
	if err := json.Unmarshal(body, &e); err != nil {
		return http.StatusBadRequest, nil, nil
	}
	return http.StatusCreated, nil, e
}

func validSAS(auth, resource string) bool {
	token, ok := strings.CutPrefix(auth, "SharedAccessSignature ")
	if !ok {
		return false
	}
	raw := map[string]string{}
	for _, kv := range strings.Split(token, "&") {
		k, v, _ := strings.Cut(kv, "=")
		raw[k] = v
	}
	sr, err1 := url.QueryUnescape(raw["sr"])
	sig, err2 := url.QueryUnescape(raw["sig"])
	se, err3 := strconv.ParseInt(raw["se"], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || raw["skn"] != testKeyName || se <= time.Now().Unix() {
		return false
	}
	if !strings.HasPrefix(strings.ToLower(resource), strings.ToLower(sr)) {
		return false
	}
	mac := hmac.New(sha256.New, []byte(testSASKey))
	mac.Write([]byte(raw["sr"] + "\n" + raw["se"]))
	return hmac.Equal([]byte(sig), []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil))))
}

// eventHubConfig is an azureeventhub Provider's configuration for the
// stand-in: the dispatcher's client under a policy that allows loopback.
func eventHubConfig(s *standIn, address, channel, token string) Config {
	return Config{
		Type: notificationv1.AzureEventHubProvider, Address: address, Channel: channel, Token: token, Credentials: true,
		Client: NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second), TLS: trusting(s),
	}
}

func connectionString(s *standIn, key string) string {
	return "Endpoint=sb://" + strings.TrimPrefix(s.URL, "https://") + "/;SharedAccessKeyName=" + testKeyName +
		";SharedAccessKey=" + key + ";EntityPath=" + testHub
}

// TestAzureEventHubSendsTheEvent: with a connection string, each event's
// JSON goes to the event hub signed with the policy's key; with the hub's
// name, the namespace's host in channel and a token, with the token; a
// signature of another key is refused, and not retried.
func TestAzureEventHubSendsTheEvent(t *testing.T) {
	g := NewWithT(t)
	s := newTLSStandIn(t, service(eventHubService).handle)

	e := testEvent()
	e.Message = "fetch of https://bot:hunter2@git.example.com/repo.git failed"
	n, err := New(eventHubConfig(s, connectionString(s, testSASKey), "", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), e)).To(Succeed())

	host := strings.TrimPrefix(s.URL, "https://")
	n, err = New(eventHubConfig(s, testHub, host, testEntraJWT))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), recoveredEvent())).To(Succeed())

	got := s.got()
	g.Expect(got).To(HaveLen(2))
	first := got[0].(events.Event)
	g.Expect(first.ID).To(Equal(e.ID))
	g.Expect(first.Reason).To(Equal(e.Reason))
	g.Expect(first.Message).To(Equal("fetch of https://git.example.com/repo.git failed"))
	g.Expect(got[1].(events.Event).Reason).To(Equal(recoveredEvent().Reason))

	expectPostFails(t, eventHubConfig(s, connectionString(s, "b3RoZXIta2V5"), "", ""), "the azureeventhub endpoint answered 401 Unauthorized", true)
	expectPostFails(t, eventHubConfig(s, testHub, host, "expired"), "the azureeventhub endpoint answered 401 Unauthorized", true)
	s.answer(http.StatusServiceUnavailable, nil)
	expectPostFails(t, eventHubConfig(s, testHub, host, testEntraJWT), "the azureeventhub endpoint answered 503 Service Unavailable", false)

	refused := eventHubConfig(s, testHub, host, testEntraJWT)
	refused.Client = NewHTTPClient(AddressPolicy{}, 5*time.Second)
	n, err = New(refused)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(IsPermanent(n.Post(context.Background(), e))).To(BeTrue(), "loopback refused by the policy")
}

// TestAzureEventHubForms: a bare namespace is the public cloud's; a
// connection string must name the hub and the key, and not come with a
// token; a hub's name needs a token; no error quotes the key.
func TestAzureEventHubForms(t *testing.T) {
	g := NewWithT(t)
	n, err := New(Config{Type: notificationv1.AzureEventHubProvider, Address: "hub1", Channel: "fluxv2", Token: testEntraJWT})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.(*azureEventHub).resource).To(Equal("https://fluxv2.servicebus.windows.net/hub1"))
	n, err = New(Config{Type: notificationv1.AzureEventHubProvider, Address: "hub1", Channel: "fluxv2.servicebus.chinacloudapi.cn", Token: testEntraJWT})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.(*azureEventHub).resource).To(Equal("https://fluxv2.servicebus.chinacloudapi.cn/hub1"))
	n, err = New(Config{Type: notificationv1.AzureEventHubProvider,
		Address: "Endpoint=sb://fluxv2.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=SECRET=;EntityPath=hub1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.(*azureEventHub).resource).To(Equal("https://fluxv2.servicebus.windows.net/hub1"))
	g.Expect(n.(*azureEventHub).key).To(Equal("SECRET="))

	for address, want := range map[string]string{
		"Endpoint=sb://fluxv2.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=SECRET":                   "has no EntityPath",
		"SharedAccessKeyName=Root;SharedAccessKey=SECRET;EntityPath=hub1":                                                "has no Endpoint",
		"Endpoint=sb://fluxv2.servicebus.windows.net/;SharedAccessKey=SECRET;EntityPath=hub1":                            "has no SharedAccessKeyName and SharedAccessKey",
		"Endpoint=sb://fluxv2.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=SECRET;EntityPath=hub1 x": "has no EntityPath",
		"https://fluxv2.servicebus.windows.net/hub1":                                                                     "must be an Event Hubs connection string (in the Secret) or an event hub's name",
	} {
		_, err := New(Config{Type: notificationv1.AzureEventHubProvider, Address: address, Channel: "fluxv2", Token: "t"})
		if strings.Contains(address, "SharedAccessKey") {
			g.Expect(err).To(MatchError(ContainSubstring("not both")), address)
			_, err = New(Config{Type: notificationv1.AzureEventHubProvider, Address: address})
		}
		g.Expect(err).To(MatchError(ContainSubstring(want)), address)
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"), address)
	}
	_, err = New(Config{Type: notificationv1.AzureEventHubProvider, Address: "hub1", Channel: "fluxv2"})
	g.Expect(err).To(MatchError(ContainSubstring(`needs spec.secretRef with the key "token" (a Microsoft Entra access token`)))
	_, err = New(Config{Type: notificationv1.AzureEventHubProvider, Address: "hub1", Channel: "flux v2/x", Token: "t"})
	g.Expect(err).To(MatchError(ContainSubstring("channel must be the Event Hubs namespace")))
}
