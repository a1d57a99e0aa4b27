package notifier

import (
	"context"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

// googleChatArgs is the part of Google Chat's Message resource a webhook
// may send; the stand-in refuses unknown fields as the API does (400
// INVALID_ARGUMENT, "Unknown name").
type googleChatArgs struct {
	Text    string `json:"text"`
	CardsV2 []struct {
		CardID string `json:"cardId"`
		Card   struct {
			Header *struct {
				Title    string `json:"title"`
				Subtitle string `json:"subtitle"`
				ImageURL string `json:"imageUrl"`
			} `json:"header"`
			Sections []struct {
				Header  string `json:"header"`
				Widgets []struct {
					TextParagraph *struct {
						Text string `json:"text"`
					} `json:"textParagraph"`
					DecoratedText map[string]any `json:"decoratedText"`
				} `json:"widgets"`
			} `json:"sections"`
		} `json:"card"`
	} `json:"cardsV2"`
	Thread *struct {
		ThreadKey string `json:"threadKey"`
	} `json:"thread"`
}

// googleChatSpace stands in for a space's incoming webhook:
// POST /v1/spaces/{space}/messages?key=…&token=… (the credential), errors
// as {"error": {"code", "message", "status"}}.
type googleChatSpace struct {
	*standIn
	mu      sync.Mutex
	status  int
	threads []string
}

func newGoogleChatSpace(t *testing.T) *googleChatSpace {
	s := &googleChatSpace{}
	s.standIn = newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		s.mu.Lock()
		defer s.mu.Unlock()
		fail := func(code int, status string) {
			reply(w, code, map[string]any{"error": map[string]any{"code": code, "message": "Invalid request " + r.URL.RawQuery, "status": status}})
		}
		q := r.URL.Query()
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/spaces/AAAA/messages":
			fail(http.StatusNotFound, "NOT_FOUND")
			return nil
		case q.Get("key") != "KEY" || q.Get("token") != "SECRETTOKEN":
			fail(http.StatusUnauthorized, "UNAUTHENTICATED")
			return nil
		case s.status != 0:
			fail(s.status, "RESOURCE_EXHAUSTED")
			return nil
		case q.Has("messageReplyOption") && q.Get("messageReplyOption") != "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD" && q.Get("messageReplyOption") != "REPLY_MESSAGE_OR_FAIL":
			fail(http.StatusBadRequest, "INVALID_ARGUMENT")
			return nil
		}
		var args googleChatArgs
		if err := strictJSON(body, &args); err != nil || (args.Text == "" && len(args.CardsV2) == 0) {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT")
			return nil
		}
		for _, c := range args.CardsV2 {
			if c.CardID == "" {
				fail(http.StatusBadRequest, "INVALID_ARGUMENT")
				return nil
			}
		}
		s.threads = append(s.threads, q.Get("threadKey"))
		reply(w, http.StatusOK, map[string]any{"name": "spaces/AAAA/messages/1", "thread": map[string]any{"name": "spaces/AAAA/threads/1"}})
		return args
	})
	return s
}

func googleChatConfig(s *googleChatSpace) Config {
	return Config{Type: notificationv1.GoogleChatProvider, Address: s.URL + "/v1/spaces/AAAA/messages?key=KEY&token=SECRETTOKEN"}
}

// TestGoogleChatPostsACard: the webhook gets a card with the alert in the
// card's HTML subset (escaped), and with spec.threadPerObject one thread
// key per object.
func TestGoogleChatPostsACard(t *testing.T) {
	g := NewWithT(t)
	space := newGoogleChatSpace(t)
	n, err := New(googleChatConfig(space))
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = "<font color=red>x</font>"
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	got := space.accepted()[0]
	g.Expect(got["text"]).To(Equal("🚨 kustomization/apps/web: DriftDetected"))
	card := got["cardsV2"].([]any)[0].(map[string]any)["card"].(map[string]any)
	g.Expect(card["header"]).To(Equal(map[string]any{"title": "kustomization/apps/web", "subtitle": "sync-controller", "imageUrl": ""}))
	text := card["sections"].([]any)[0].(map[string]any)["widgets"].([]any)[0].(map[string]any)["textParagraph"].(map[string]any)["text"]
	g.Expect(text).To(HavePrefix("<b>🚨 kustomization/apps/web: DriftDetected</b><br>&lt;font color=red&gt;x&lt;/font&gt;<br>"))

	cfg := googleChatConfig(space)
	cfg.ThreadPerObject = true
	n, err = New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	other := testEvent()
	other.InvolvedObject.Name = "api"
	g.Expect(n.Post(context.Background(), other)).To(Succeed())
	g.Expect(space.threads[0]).To(BeEmpty())
	g.Expect(space.threads[1]).To(HavePrefix("plumb-"))
	g.Expect(space.threads[2]).To(Equal(space.threads[1]))
	g.Expect(space.threads[3]).NotTo(Equal(space.threads[1]))
}

// TestGoogleChatErrors: the key and token of the URL never show; 4xx is
// permanent, 429 retried.
func TestGoogleChatErrors(t *testing.T) {
	space := newGoogleChatSpace(t)
	cfg := googleChatConfig(space)
	cfg.Address = space.URL + "/v1/spaces/AAAA/messages?key=KEY&token=SECRETwrong"
	expectPostFails(t, cfg, "the googlechat endpoint answered 401 Unauthorized", true)

	space.status = http.StatusTooManyRequests
	expectPostFails(t, googleChatConfig(space), "the googlechat endpoint answered 429 Too Many Requests", false)

	_, err := New(Config{Type: notificationv1.GoogleChatProvider, Address: "https://chat.googleapis.com/v1/spaces/AAAA/messages"})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("webhook URL, with its key and token")))
}
