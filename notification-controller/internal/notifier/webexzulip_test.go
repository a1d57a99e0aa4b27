package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

type webexArgs struct {
	RoomID        string `json:"roomId"`
	ParentID      string `json:"parentId"`
	ToPersonEmail string `json:"toPersonEmail"`
	Text          string `json:"text"`
	Markdown      string `json:"markdown"`
}

// newWebexAPI stands in for POST /v1/messages: a bot token, a roomId the
// bot is in, at most 7439 bytes of markdown; 429 with Retry-After.
func newWebexAPI(t *testing.T, status int) *standIn {
	return newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		fail := func(code int) {
			reply(w, code, map[string]any{"message": "failed", "errors": []any{map[string]any{"description": "failed"}}, "trackingId": "ROUTER_1"})
		}
		var args webexArgs
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
			fail(http.StatusNotFound)
		case r.Header.Get("Authorization") != "Bearer SECRETBOT":
			fail(http.StatusUnauthorized)
		case status == http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "12")
			fail(status)
		case strictJSON(body, &args) != nil || args.Text == "" && args.Markdown == "" || len(args.Markdown) > webexLimit:
			fail(http.StatusBadRequest)
		case args.RoomID != "Y2lzY29zcGFyazovL3VzL1JPT00vb3Bz":
			fail(http.StatusNotFound)
		default:
			reply(w, http.StatusOK, map[string]any{"id": "msg-1", "roomId": args.RoomID})
			return args
		}
		return nil
	})
}

// TestWebexPostsMarkdown: the bot's message in the room, Markdown
// escaped and bounded; a bad token permanent, 429 retried.
func TestWebexPostsMarkdown(t *testing.T) {
	g := NewWithT(t)
	api := newWebexAPI(t, 0)
	cfg := Config{Type: notificationv1.WebexProvider, Address: api.URL + "/v1/messages", Channel: "Y2lzY29zcGFyazovL3VzL1JPT00vb3Bz", Token: "SECRETBOT"}
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = "*not* _emphasis_ " + strings.Repeat("y", 9000)
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	md := api.accepted()[0]["markdown"].(string)
	g.Expect(md).To(HavePrefix("**🚨 kustomization/apps/web: DriftDetected**\n\\*not\\* \\_emphasis\\_ yyy"))
	g.Expect(md).To(HaveSuffix(ellipsis))

	wrong := cfg
	wrong.Token = "wrong"
	expectPostFails(t, wrong, "the webex endpoint answered 401 Unauthorized", true)

	busy := newWebexAPI(t, http.StatusTooManyRequests)
	cfg.Address = busy.URL + "/v1/messages"
	expectPostFails(t, cfg, "the webex endpoint answered 429 Too Many Requests (retry after 12s)", false)

	_, err = New(Config{Type: notificationv1.WebexProvider, Address: WebexMessagesURL, Token: "SECRETBOT"})
	g.Expect(err).To(MatchError(ContainSubstring("needs spec.channel, the roomId")))
}

// newZulipServer stands in for POST /api/v1/messages: form-encoded, basic
// auth with the bot's email and API key, {"result": "error", "msg",
// "code"} on failure.
func newZulipServer(t *testing.T, status int) *standIn {
	return newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		fail := func(code int, c string) {
			reply(w, code, map[string]any{"result": "error", "msg": "failed for SECRETKEY", "code": c})
		}
		email, key, _ := r.BasicAuth()
		form, err := url.ParseQuery(string(body))
		known := map[string]bool{"type": true, "to": true, "topic": true, "content": true}
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/api/v1/messages":
			fail(http.StatusNotFound, "BAD_REQUEST")
			return nil
		case email != "plumb-bot@zulip.example" || key != "SECRETKEY":
			fail(http.StatusUnauthorized, "INVALID_API_KEY")
			return nil
		case status == http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "2")
			fail(status, "RATE_LIMIT_HIT")
			return nil
		case r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || err != nil:
			fail(http.StatusBadRequest, "BAD_REQUEST")
			return nil
		}
		for k, v := range form {
			if !known[k] || len(v) != 1 {
				fail(http.StatusBadRequest, "BAD_REQUEST")
				return nil
			}
		}
		switch {
		case form.Get("type") != "stream" && form.Get("type") != "channel":
			fail(http.StatusBadRequest, "BAD_REQUEST")
		case form.Get("to") != "deploys":
			fail(http.StatusBadRequest, "STREAM_DOES_NOT_EXIST")
		case form.Get("topic") == "" || len([]rune(form.Get("topic"))) > zulipTopicLimit:
			fail(http.StatusBadRequest, "BAD_REQUEST")
		case form.Get("content") == "" || len(form.Get("content")) > zulipLimit:
			fail(http.StatusBadRequest, "BAD_REQUEST")
		default:
			reply(w, http.StatusOK, map[string]any{"result": "success", "msg": "", "id": 42})
			return map[string]string{"to": form.Get("to"), "topic": form.Get("topic"), "content": form.Get("content")}
		}
		return nil
	})
}

// TestZulipPostsAStreamMessage: Flux's <stream>/<topic> channel, or with
// spec.threadPerObject a topic per object; Zulip's error codes named,
// the API key never.
func TestZulipPostsAStreamMessage(t *testing.T) {
	g := NewWithT(t)
	srv := newZulipServer(t, 0)
	cfg := Config{Type: notificationv1.ZulipProvider, Address: srv.URL, Channel: "deploys/alerts", User: "plumb-bot@zulip.example", Password: "SECRETKEY"}
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	got := srv.accepted()[0]
	g.Expect(got).To(HaveKeyWithValue("to", "deploys"))
	g.Expect(got).To(HaveKeyWithValue("topic", "alerts"))
	g.Expect(got["content"]).To(HavePrefix("**🚨 kustomization/apps/web: DriftDetected**\n1 object drifted from Git\n**Revision: **main@sha1:4f3c2b1a"))

	threads := cfg
	threads.Channel, threads.ThreadPerObject = "deploys", true
	n, err = New(threads)
	g.Expect(err).NotTo(HaveOccurred())
	long := testEvent()
	long.InvolvedObject.Name = strings.Repeat("n", 80)
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(n.Post(context.Background(), long)).To(Succeed())
	g.Expect(srv.accepted()[1]).To(HaveKeyWithValue("topic", "kustomization/apps/web"))
	g.Expect(srv.accepted()[2]["topic"]).To(HaveSuffix(ellipsis))

	for _, tc := range []struct {
		mutate    func(*Config)
		status    int
		permanent bool
		want      string
	}{
		{mutate: func(c *Config) { c.Channel = "nope/alerts" }, permanent: true, want: `the zulip endpoint answered 400 Bad Request, error "STREAM_DOES_NOT_EXIST"`},
		{mutate: func(c *Config) { c.Password = "wrong" }, permanent: true, want: `the zulip endpoint answered 401 Unauthorized, error "INVALID_API_KEY"`},
		{status: http.StatusTooManyRequests, want: `the zulip endpoint answered 429 Too Many Requests, error "RATE_LIMIT_HIT" (retry after 2s)`},
	} {
		srv := newZulipServer(t, tc.status)
		c := cfg
		c.Address = srv.URL
		if tc.mutate != nil {
			tc.mutate(&c)
		}
		expectPostFails(t, c, tc.want, tc.permanent)
	}

	for _, bad := range []Config{
		{Channel: "deploys", User: "plumb-bot@zulip.example", Password: "SECRETKEY"}, // no topic
		{Channel: "deploys/alerts", User: "plumb-bot@zulip.example"},                 // no key
	} {
		bad.Type, bad.Address = notificationv1.ZulipProvider, srv.URL
		_, err := New(bad)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
	}
}
