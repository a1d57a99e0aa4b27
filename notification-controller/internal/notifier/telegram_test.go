package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

const telegramBotToken = "123456789:AAH-SECRETtoken_x"

type telegramArgs struct {
	ChatID             string          `json:"chat_id"`
	MessageThreadID    string          `json:"message_thread_id"`
	Text               string          `json:"text"`
	ParseMode          string          `json:"parse_mode"`
	LinkPreviewOptions *map[string]any `json:"link_preview_options"`
	DisableNotify      bool            `json:"disable_notification"`
}

// telegramAPI stands in for the Bot API's sendMessage: the token in the
// path, {"ok": false, "error_code", "description"} with 400, 401, 403 and
// 429, and HTML parsed as Telegram does (known tags, four entities) with
// 4096 characters at most after parsing.
type telegramAPI struct {
	*standIn
	mu      sync.Mutex
	status  int // forces an error answer
	visible []string
}

func newTelegramAPI(t *testing.T) *telegramAPI {
	s := &telegramAPI{}
	s.standIn = newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		s.mu.Lock()
		defer s.mu.Unlock()
		fail := func(code int, desc string) {
			reply(w, code, map[string]any{"ok": false, "error_code": code, "description": desc})
		}
		switch {
		case r.URL.Path != "/bot"+telegramBotToken+"/sendMessage" && strings.HasSuffix(r.URL.Path, "/sendMessage"):
			fail(http.StatusUnauthorized, "Unauthorized")
			return nil
		case r.URL.Path != "/bot"+telegramBotToken+"/sendMessage" || r.Method != http.MethodPost:
			fail(http.StatusNotFound, "Not Found")
			return nil
		case s.status == http.StatusTooManyRequests:
			reply(w, s.status, map[string]any{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 7", "parameters": map[string]any{"retry_after": 7}})
			return nil
		case s.status != 0:
			fail(s.status, "Forbidden: bot was kicked from the group chat "+telegramBotToken)
			return nil
		}
		var args telegramArgs
		if err := strictJSON(body, &args); err != nil {
			fail(http.StatusBadRequest, "Bad Request: "+err.Error())
			return nil
		}
		if args.ChatID != "-1001234567890" {
			fail(http.StatusBadRequest, "Bad Request: chat not found")
			return nil
		}
		if args.ParseMode != "HTML" {
			fail(http.StatusBadRequest, "Bad Request: unsupported parse_mode")
			return nil
		}
		text, err := telegramParse(args.Text)
		switch {
		case err != nil:
			fail(http.StatusBadRequest, "Bad Request: can't parse entities: "+err.Error())
			return nil
		case text == "":
			fail(http.StatusBadRequest, "Bad Request: message text is empty")
			return nil
		case len(utf16.Encode([]rune(text))) > telegramLimit:
			fail(http.StatusBadRequest, "Bad Request: message is too long")
			return nil
		}
		s.visible = append(s.visible, text)
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{"message_id": len(s.visible), "text": text}})
		return args
	})
	return s
}

var telegramTag = regexp.MustCompile(`^/?(b|strong|i|em|u|ins|s|strike|del|code|pre|tg-spoiler|blockquote)$`)

// telegramParse returns the text a reader sees of Telegram HTML, or why
// Telegram would refuse it.
func telegramParse(s string) (string, error) {
	var out strings.Builder
	var open []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return "", errors.New("unclosed start tag")
			}
			tag := s[i+1 : i+end]
			if !telegramTag.MatchString(tag) {
				return "", fmt.Errorf("unsupported start tag %q", tag)
			}
			if strings.HasPrefix(tag, "/") {
				if len(open) == 0 || open[len(open)-1] != tag[1:] {
					return "", fmt.Errorf("unmatched end tag %q", tag)
				}
				open = open[:len(open)-1]
			} else {
				open = append(open, tag)
			}
			i += end
		case '>':
			return "", errors.New("unexpected '>'")
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 {
				return "", errors.New("unfinished entity")
			}
			switch s[i : i+end+1] {
			case "&lt;":
				out.WriteByte('<')
			case "&gt;":
				out.WriteByte('>')
			case "&amp;":
				out.WriteByte('&')
			case "&quot;":
				out.WriteByte('"')
			default:
				return "", fmt.Errorf("unsupported entity %q", s[i:i+end+1])
			}
			i += end
		default:
			out.WriteByte(s[i])
		}
	}
	if len(open) > 0 {
		return "", errors.New("unclosed tags")
	}
	return out.String(), nil
}

func telegramConfig(s *telegramAPI) Config {
	return Config{Type: notificationv1.TelegramProvider, Address: s.URL, Channel: "-1001234567890", Token: telegramBotToken}
}

// TestTelegramSendsEscapedHTML: sendMessage gets chat_id from the channel
// and the alert as Telegram HTML; what the reader sees is the event's
// text, markup characters and all, within 4096 characters.
func TestTelegramSendsEscapedHTML(t *testing.T) {
	g := NewWithT(t)
	api := newTelegramAPI(t)
	n, err := New(telegramConfig(api))
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = `health check failed: <Deployment> "web" & 2 more`
	g.Expect(n.Post(context.Background(), e)).To(Succeed())

	long := testEvent()
	long.Message = strings.Repeat("é<", 5000)
	g.Expect(n.Post(context.Background(), long)).To(Succeed())

	g.Expect(api.visible).To(HaveLen(2))
	g.Expect(api.visible[0]).To(Equal("🚨 kustomization/apps/web: DriftDetected\n" +
		`health check failed: <Deployment> "web" & 2 more` + "\n" +
		"Revision: main@sha1:4f3c2b1a\nSummary: prod\nDrift: Deployment/apps/web spec.replicas (by kubectl-edit)\ncluster: eu-1"))
	g.Expect(api.visible[1]).To(HaveSuffix(ellipsis))
	g.Expect(len(utf16.Encode([]rune(api.visible[1])))).To(BeNumerically(">", telegramLimit-10))
	g.Expect(api.accepted()[0]["link_preview_options"]).To(Equal(map[string]any{"is_disabled": true}))

	// chat_id:thread posts in a forum topic.
	cfg := telegramConfig(api)
	cfg.Channel = "-1001234567890:42"
	n, err = New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	g.Expect(api.accepted()[2]["message_thread_id"]).To(Equal("42"))
}

// TestTelegramErrors: the token is in the URL's path, so it must not show
// in any error, transport errors included; 400, 401 and 403 are
// permanent, 429 and 5xx retried.
func TestTelegramErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		mutate    func(*Config)
		permanent bool
		want      string
	}{
		{name: "unknown chat", mutate: func(c *Config) { c.Channel = "-100999" }, permanent: true, want: "the telegram endpoint answered 400 Bad Request"},
		{name: "wrong token", mutate: func(c *Config) { c.Token = "123456789:AAH-wrong" }, permanent: true, want: "the telegram endpoint answered 401 Unauthorized"},
		{name: "kicked", status: http.StatusForbidden, permanent: true, want: "the telegram endpoint answered 403 Forbidden"},
		{name: "flood", status: http.StatusTooManyRequests, want: "the telegram endpoint answered 429 Too Many Requests"},
		{name: "down", status: http.StatusBadGateway, want: "the telegram endpoint answered 502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newTelegramAPI(t)
			api.status = tc.status
			cfg := telegramConfig(api)
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			expectPostFails(t, cfg, tc.want, tc.permanent)
		})
	}

	t.Run("transport error quoting the URL", func(t *testing.T) {
		g := NewWithT(t)
		cfg := Config{Type: notificationv1.TelegramProvider, Address: TelegramAPI, Channel: "-1001234567890", Token: telegramBotToken,
			Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return nil, fmt.Errorf("proxy refused %s", r.URL)
			})}}
		n, err := New(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		err = n.Post(context.Background(), testEvent())
		g.Expect(err).To(HaveOccurred())
		g.Expect(IsPermanent(err)).To(BeFalse())
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
		g.Expect(err.Error()).To(ContainSubstring("[token]"))
	})

	t.Run("configuration", func(t *testing.T) {
		g := NewWithT(t)
		for _, cfg := range []Config{
			{Channel: "-1001234567890"},
			{Channel: "-1001234567890", Token: "not/a?token#SECRET"},
			{Token: telegramBotToken},
			{Channel: "-1001234567890:topic", Token: telegramBotToken},
		} {
			cfg.Type, cfg.Address = notificationv1.TelegramProvider, TelegramAPI
			_, err := New(cfg)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
		}
	})
}
