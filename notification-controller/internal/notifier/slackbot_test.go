package notifier

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

const slackBotToken = "xoxb-1111-2222-SECRETTOKEN"

// slackMessageArgs are chat.postMessage's documented arguments; the
// stand-in refuses any other, so the notifier sends nothing Slack would
// not know.
type slackMessageArgs struct {
	Channel        string            `json:"channel"`
	Text           string            `json:"text"`
	Attachments    []slackAttachArgs `json:"attachments"`
	Blocks         []map[string]any  `json:"blocks"`
	Username       string            `json:"username"`
	IconEmoji      string            `json:"icon_emoji"`
	IconURL        string            `json:"icon_url"`
	ThreadTS       string            `json:"thread_ts"`
	ReplyBroadcast bool              `json:"reply_broadcast"`
	Mrkdwn         *bool             `json:"mrkdwn"`
	UnfurlLinks    *bool             `json:"unfurl_links"`
}

type slackAttachArgs struct {
	Fallback   string           `json:"fallback"`
	Color      string           `json:"color"`
	Pretext    string           `json:"pretext"`
	AuthorName string           `json:"author_name"`
	Title      string           `json:"title"`
	TitleLink  string           `json:"title_link"`
	Text       string           `json:"text"`
	Fields     []map[string]any `json:"fields"`
	Footer     string           `json:"footer"`
	Ts         int64            `json:"ts"`
	MrkdwnIn   []string         `json:"mrkdwn_in"`
}

// slackAPI stands in for chat.postMessage: HTTP 200 with {"ok": false,
// "error": ...} for what Slack refuses, 429 with Retry-After when rate
// limited, and a ts per message that later replies must name.
type slackAPI struct {
	*standIn
	mu sync.Mutex
	// answer, when set, overrides the verdict: an error code, or
	// "ratelimited" for Slack's 429.
	answer string
	// pad is the size of the message echo in a successful answer.
	pad   int
	posts int
	roots map[string]bool // thread roots posted in #deploys
}

func newSlackAPI(t *testing.T) *slackAPI {
	s := &slackAPI{roots: map[string]bool{}}
	s.standIn = newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		s.mu.Lock()
		defer s.mu.Unlock()
		fail := func(code string) { reply(w, http.StatusOK, map[string]any{"ok": false, "error": code}) }
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/api/chat.postMessage":
			reply(w, http.StatusNotFound, map[string]any{"ok": false, "error": "unknown_method"})
			return nil
		case s.answer == "ratelimited":
			w.Header().Set("Retry-After", "3")
			reply(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return nil
		case r.Header.Get("Authorization") == "":
			fail("not_authed")
			return nil
		case r.Header.Get("Authorization") != "Bearer "+slackBotToken:
			fail("invalid_auth")
			return nil
		case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
			fail("invalid_arguments")
			return nil
		case s.answer != "":
			fail(s.answer)
			return nil
		}
		var args slackMessageArgs
		if err := strictJSON(body, &args); err != nil {
			fail("invalid_arguments")
			return nil
		}
		switch {
		case args.Channel == "#private":
			fail("not_in_channel")
			return nil
		case args.Channel != "#deploys" && args.Channel != "C0DEPLOYS":
			fail("channel_not_found")
			return nil
		case args.Text == "" && len(args.Attachments) == 0 && len(args.Blocks) == 0:
			fail("no_text")
			return nil
		case args.ThreadTS != "" && !s.roots[args.ThreadTS]:
			fail("thread_not_found")
			return nil
		}
		s.posts++
		ts := fmt.Sprintf("1712345678.%06d", s.posts)
		if args.ThreadTS == "" {
			s.roots[ts] = true
		}
		// Slack's order: ok, channel and ts, then the message's echo.
		reply(w, http.StatusOK, struct {
			OK      bool           `json:"ok"`
			Channel string         `json:"channel"`
			TS      string         `json:"ts"`
			Message map[string]any `json:"message"`
		}{true, "C0DEPLOYS", ts, map[string]any{"type": "message", "text": strings.Repeat("x", s.pad)}})
		return args
	})
	return s
}

func (s *slackAPI) set(answer string) {
	s.mu.Lock()
	s.answer = answer
	s.mu.Unlock()
}

func slackBotConfig(s *slackAPI) Config {
	return Config{Type: notificationv1.SlackProvider, Address: s.URL + "/api/chat.postMessage", Channel: "#deploys", Username: "plumb", Token: slackBotToken}
}

// TestSlackBotTokenPostsThroughChatPostMessage: with a token, the message
// goes to chat.postMessage with the token as a bearer token, in the
// channel, with the webhook form's attachment.
func TestSlackBotTokenPostsThroughChatPostMessage(t *testing.T) {
	g := NewWithT(t)
	api := newSlackAPI(t)
	n, err := New(slackBotConfig(api))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())

	got := api.accepted()
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0]).To(HaveKeyWithValue("channel", "#deploys"))
	g.Expect(got[0]).To(HaveKeyWithValue("username", "plumb"))
	g.Expect(got[0]).To(HaveKeyWithValue("thread_ts", ""))
	att := got[0]["attachments"].([]any)[0].(map[string]any)
	g.Expect(att).To(HaveKeyWithValue("author_name", "kustomization/apps/web"))
	g.Expect(att).To(HaveKeyWithValue("color", "danger"))
	g.Expect(att).To(HaveKeyWithValue("text", "1 object drifted from Git"))
}

// TestSlackBotErrors: chat.postMessage's verdict is in the body of a 200
// answer. Auth and channel errors are permanent, a rate limit (429) and
// Slack's own failures are retried; the error names Slack's code, never
// the token or the address.
func TestSlackBotErrors(t *testing.T) {
	for _, tc := range []struct {
		answer    string
		token     string
		permanent bool
		want      string
	}{
		{token: "xoxb-wrong", permanent: true, want: `the slack endpoint answered 200 OK, error "invalid_auth"`},
		{answer: "channel_not_found", permanent: true, want: `the slack endpoint answered 200 OK, error "channel_not_found"`},
		{answer: "not_in_channel", permanent: true, want: `the slack endpoint answered 200 OK, error "not_in_channel"`},
		{answer: "is_archived", permanent: true, want: `the slack endpoint answered 200 OK, error "is_archived"`},
		{answer: "ratelimited", permanent: false, want: "the slack endpoint answered 429 Too Many Requests (retry after 3s)"},
		{answer: "internal_error", permanent: false, want: `the slack endpoint answered 200 OK, error "internal_error"`},
		{answer: "service_unavailable", permanent: false, want: `the slack endpoint answered 200 OK, error "service_unavailable"`},
		// A code outside Slack's vocabulary is not repeated.
		{answer: "see https://evil.example/" + slackBotToken, permanent: true, want: "the slack endpoint answered 200 OK"},
		{answer: strings.Repeat("a", 200), permanent: true, want: "the slack endpoint answered 200 OK"},
	} {
		t.Run(tc.answer+tc.token, func(t *testing.T) {
			g := NewWithT(t)
			api := newSlackAPI(t)
			api.set(tc.answer)
			cfg := slackBotConfig(api)
			if tc.token != "" {
				cfg.Token = tc.token
			}
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), testEvent())
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsPermanent(err)).To(Equal(tc.permanent), err.Error())
			g.Expect(err).To(MatchError(tc.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("SECRETTOKEN"))
			g.Expect(err.Error()).NotTo(ContainSubstring("evil"))
			g.Expect(err.Error()).NotTo(ContainSubstring(api.URL))
		})
	}

	t.Run("wrong channel", func(t *testing.T) {
		g := NewWithT(t)
		api := newSlackAPI(t)
		cfg := slackBotConfig(api)
		cfg.Channel = "#private"
		n, _ := New(cfg)
		err := n.Post(context.Background(), testEvent())
		g.Expect(err).To(MatchError(`the slack endpoint answered 200 OK, error "not_in_channel"`))
		g.Expect(IsPermanent(err)).To(BeTrue())
	})

	t.Run("not a chat.postMessage answer", func(t *testing.T) {
		proxy := newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
			_, _ = w.Write([]byte("<html>sign in</html>"))
			return nil
		})
		expectPostFails(t, Config{Type: notificationv1.SlackProvider, Address: proxy.URL + "/api/chat.postMessage", Channel: "#deploys", Token: slackBotToken},
			"the slack endpoint's answer is not a chat.postMessage answer", true)
	})
}

// TestSlackWebhookKeepsItsToken: a token with an incoming-webhook address
// is the webhook form still, the token a bearer token, as before bot
// tokens (and as Flux does).
func TestSlackWebhookKeepsItsToken(t *testing.T) {
	g := NewWithT(t)
	hook := newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		_, _ = w.Write([]byte("ok"))
		return map[string]string{"authorization": r.Header.Get("Authorization"), "path": r.URL.Path}
	})
	n, err := New(Config{Type: notificationv1.SlackProvider, Address: hook.URL + "/services/T/B/X", Channel: "#deploys", Token: slackBotToken})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(hook.accepted()).To(Equal([]map[string]any{{"authorization": "Bearer " + slackBotToken, "path": "/services/T/B/X"}}))
}

// TestSlackBotConfiguration: what a bot-token Provider lacks is said when
// it is built (its Ready condition), without quoting the token.
func TestSlackBotConfiguration(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"token without channel": {Config{Address: SlackPostMessageURL, Token: slackBotToken}, "needs spec.channel"},
		"threads on a webhook":  {Config{Address: "https://hooks.slack.com/services/T/B/X", Token: slackBotToken, ThreadPerObject: true}, "needs chat.postMessage with a Slack bot token"},
		"postMessage, no token": {Config{Address: SlackPostMessageURL, Channel: "#deploys"}, "chat.postMessage needs a bot token"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.cfg.Type = notificationv1.SlackProvider
			_, err := New(tc.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("SECRETTOKEN"))
		})
	}
}

// TestSlackThreadPerObject: the first message about an object starts a
// thread, the next replies in it (thread_ts from the first answer), an
// error is broadcast to the channel too, another object has its own
// thread, and a thread Slack no longer knows is started anew.
func TestSlackThreadPerObject(t *testing.T) {
	g := NewWithT(t)
	api := newSlackAPI(t)
	api.pad = 100 << 10 // the echo is cut at maxResponse: ts comes before it
	store := NewThreadStore()
	cfg := slackBotConfig(api)
	cfg.ThreadPerObject = true
	cfg.Threads = store.For("provider-uid")
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())

	web := testEvent()
	web.Severity = events.SeverityInfo
	g.Expect(n.Post(context.Background(), web)).To(Succeed())
	failed := testEvent() // same object, an error
	g.Expect(n.Post(context.Background(), failed)).To(Succeed())
	other := testEvent()
	other.InvolvedObject.Name = "api"
	g.Expect(n.Post(context.Background(), other)).To(Succeed())

	// A notifier built again (a new Secret, a new generation) keeps the
	// threads: they are the dispatcher's.
	again, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Post(context.Background(), web)).To(Succeed())

	got := api.accepted()
	g.Expect(got).To(HaveLen(4))
	g.Expect(got[0]["thread_ts"]).To(Equal(""))
	g.Expect(got[1]["thread_ts"]).To(Equal("1712345678.000001"))
	g.Expect(got[1]["reply_broadcast"]).To(BeTrue())
	g.Expect(got[2]["thread_ts"]).To(Equal(""), "another object, another thread")
	g.Expect(got[3]["thread_ts"]).To(Equal("1712345678.000001"))
	g.Expect(got[3]["reply_broadcast"]).To(BeFalse())

	// Another Provider has threads of its own.
	other2 := cfg
	other2.Threads = store.For("other-provider")
	n2, _ := New(other2)
	g.Expect(n2.Post(context.Background(), web)).To(Succeed())
	g.Expect(api.accepted()[4]["thread_ts"]).To(Equal(""))

	// Slack forgot the thread (say, its parent was deleted): the reply
	// fails with a retryable error and the retry starts a new thread.
	api.mu.Lock()
	api.roots = map[string]bool{}
	api.mu.Unlock()
	err = n.Post(context.Background(), web)
	g.Expect(err).To(MatchError(`the slack endpoint answered 200 OK, error "thread_not_found"`))
	g.Expect(IsPermanent(err)).To(BeFalse())
	g.Expect(n.Post(context.Background(), web)).To(Succeed())
	last := api.accepted()
	g.Expect(last[len(last)-1]["thread_ts"]).To(Equal(""))
}

// TestThreadStoreIsBounded: a Provider remembers maxThreadsPerProvider
// objects, the least recently used forgotten first, and the store holds
// maxThreadProviders Providers.
func TestThreadStoreIsBounded(t *testing.T) {
	g := NewWithT(t)
	store := NewThreadStore()
	th := store.For("p")
	for i := range maxThreadsPerProvider {
		th.put(fmt.Sprint("object-", i), "1.1")
	}
	_, ok := th.get("object-0") // now the most recently used
	g.Expect(ok).To(BeTrue())
	th.put("one-more", "1.2")
	_, ok = th.get("object-1")
	g.Expect(ok).To(BeFalse(), "the least recently used went")
	_, ok = th.get("object-0")
	g.Expect(ok).To(BeTrue())
	g.Expect(th.objects.Len()).To(Equal(maxThreadsPerProvider))

	for i := range maxThreadProviders + 10 {
		store.For(fmt.Sprint("provider-", i))
	}
	g.Expect(store.providers.Len()).To(Equal(maxThreadProviders))
	g.Expect(store.For("p")).NotTo(BeIdenticalTo(th), "the oldest Provider's threads went")
}

// TestSlackEscapesWhatItDidNotWrite: an event's text comes from Git and
// from whoever can edit objects; Slack reads "<!channel>", "<@U…>" and
// "<url|label>" in it as mentions and links unless escaped.
func TestSlackEscapesWhatItDidNotWrite(t *testing.T) {
	g := NewWithT(t)
	api := newSlackAPI(t)
	n, err := New(slackBotConfig(api))
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = "<!channel> deploy <https://evil.example|your bank> & <@U123>"
	e.Reason = "<!here>"
	e.Revision = "main@sha1:<!everyone>"
	g.Expect(n.Post(context.Background(), e)).To(Succeed())

	att := api.accepted()[0]["attachments"].([]any)[0].(map[string]any)
	g.Expect(att).To(HaveKeyWithValue("text", "&lt;!channel&gt; deploy &lt;https://evil.example|your bank&gt; &amp; &lt;@U123&gt;"))
	g.Expect(att).To(HaveKeyWithValue("title", "&lt;!here&gt;"))
	fields := att["fields"].([]any)
	g.Expect(fields[0].(map[string]any)).To(HaveKeyWithValue("value", "main@sha1:&lt;!everyone&gt;"))
}
