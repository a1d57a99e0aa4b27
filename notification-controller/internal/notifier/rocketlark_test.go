package notifier

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

// rocketArgs are the fields of a Rocket.Chat incoming webhook message.
type rocketArgs struct {
	Text        string `json:"text"`
	Alias       string `json:"alias"`
	Username    string `json:"username"`
	Emoji       string `json:"emoji"`
	Avatar      string `json:"avatar"`
	IconURL     string `json:"icon_url"`
	Channel     string `json:"channel"`
	Attachments []struct {
		Title      string `json:"title"`
		TitleLink  string `json:"title_link"`
		Text       string `json:"text"`
		Color      string `json:"color"`
		AuthorName string `json:"author_name"`
		ImageURL   string `json:"image_url"`
		Collapsed  bool   `json:"collapsed"`
		Fields     []struct {
			Short bool   `json:"short"`
			Title string `json:"title"`
			Value string `json:"value"`
		} `json:"fields"`
	} `json:"attachments"`
}

// newRocketServer stands in for a Rocket.Chat integration:
// POST /hooks/{id}/{token}, {"success": false, "error"} on failure.
func newRocketServer(t *testing.T, status int) *standIn {
	return newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		var args rocketArgs
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/hooks/ID/SECRETTOKEN":
			reply(w, http.StatusNotFound, map[string]any{"success": false, "error": "Invalid integration id or token provided."})
		case status != 0:
			reply(w, status, map[string]any{"success": false, "error": "busy"})
		case strictJSON(body, &args) != nil || args.Text == "" && len(args.Attachments) == 0:
			reply(w, http.StatusBadRequest, map[string]any{"success": false, "error": "invalid payload"})
		case args.Channel != "" && args.Channel[0] != '#' && args.Channel[0] != '@':
			reply(w, http.StatusBadRequest, map[string]any{"success": false, "error": "invalid-channel"})
		default:
			reply(w, http.StatusOK, map[string]any{"success": true})
			return args
		}
		return nil
	})
}

// TestRocketPostsToTheIntegration: Rocket.Chat's JSON, a 404 for a wrong
// token permanent, a 5xx retried.
func TestRocketPostsToTheIntegration(t *testing.T) {
	g := NewWithT(t)
	srv := newRocketServer(t, 0)
	cfg := Config{Type: notificationv1.RocketProvider, Address: srv.URL + "/hooks/ID/SECRETTOKEN", Channel: "#deploys", Username: "plumb"}
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	got := srv.accepted()[0]
	g.Expect(got).To(HaveKeyWithValue("channel", "#deploys"))
	g.Expect(got).To(HaveKeyWithValue("username", "plumb"))
	g.Expect(got).To(HaveKeyWithValue("text", "🚨 kustomization/apps/web: DriftDetected"))
	att := got["attachments"].([]any)[0].(map[string]any)
	g.Expect(att).To(HaveKeyWithValue("color", "#a30200"))
	g.Expect(att).To(HaveKeyWithValue("text", "1 object drifted from Git"))

	cfg.Address = srv.URL + "/hooks/ID/wrong"
	expectPostFails(t, cfg, "the rocket endpoint answered 404 Not Found", true)

	busy := newRocketServer(t, http.StatusServiceUnavailable)
	expectPostFails(t, Config{Type: notificationv1.RocketProvider, Address: busy.URL + "/hooks/ID/SECRETTOKEN"},
		"the rocket endpoint answered 503 Service Unavailable", false)
}

// larkArgs is a custom bot's interactive card message.
type larkArgs struct {
	MsgType string `json:"msg_type"`
	Card    struct {
		Config struct {
			WideScreenMode bool `json:"wide_screen_mode"`
		} `json:"config"`
		Header struct {
			Title    larkText `json:"title"`
			Template string   `json:"template"`
		} `json:"header"`
		Elements []struct {
			Tag  string   `json:"tag"`
			Text larkText `json:"text"`
		} `json:"elements"`
	} `json:"card"`
}

// newLarkBot stands in for a Lark custom bot's webhook: HTTP 200 always,
// the verdict in {"code", "msg"}; answer is the code it gives a valid
// message.
func newLarkBot(t *testing.T, answer int) *standIn {
	return newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		var args larkArgs
		switch {
		case r.URL.Path != "/open-apis/bot/v2/hook/SECRETHOOK":
			reply(w, http.StatusOK, map[string]any{"code": 19001, "msg": "param invalid: incoming webhook access token invalid"})
		case strictJSON(body, &args) != nil || args.MsgType != "interactive" || len(args.Card.Elements) == 0:
			reply(w, http.StatusOK, map[string]any{"code": 9499, "msg": "Bad Request"})
		case args.Card.Header.Title.Tag != "plain_text" || args.Card.Elements[0].Tag != "div":
			reply(w, http.StatusOK, map[string]any{"code": 9499, "msg": "Bad Request"})
		case answer != 0:
			reply(w, http.StatusOK, map[string]any{"code": answer, "msg": "frequency limited psm[lark.oapi.app_platform_runtime]appID[1]"})
		default:
			reply(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
			return args
		}
		return nil
	})
}

// TestLarkAnswersInTheBody: a refusal is HTTP 200 with a non-zero code:
// a bad hook or message is permanent, the rate limit (11232) retried.
func TestLarkAnswersInTheBody(t *testing.T) {
	g := NewWithT(t)
	bot := newLarkBot(t, 0)
	n, err := New(Config{Type: notificationv1.LarkProvider, Address: bot.URL + "/open-apis/bot/v2/hook/SECRETHOOK"})
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = "**not bold**"
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	card := bot.accepted()[0]["card"].(map[string]any)
	g.Expect(card["header"]).To(Equal(map[string]any{"title": map[string]any{"tag": "plain_text", "content": "🚨 kustomization/apps/web: DriftDetected"}, "template": "red"}))
	g.Expect(card["elements"].([]any)[0].(map[string]any)["text"].(map[string]any)["content"]).To(HavePrefix("**not bold**\nRevision: main@sha1:4f3c2b1a\n"))

	expectPostFails(t, Config{Type: notificationv1.LarkProvider, Address: bot.URL + "/open-apis/bot/v2/hook/wrong"},
		`the lark endpoint answered 200 OK, error "19001"`, true)

	limited := newLarkBot(t, 11232)
	expectPostFails(t, Config{Type: notificationv1.LarkProvider, Address: limited.URL + "/open-apis/bot/v2/hook/SECRETHOOK"},
		`the lark endpoint answered 200 OK, error "11232"`, false)
}
