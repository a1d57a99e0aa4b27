package notifier

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"plumb.dev/pkg/events"
)

// TelegramAPI is the Bot API server; spec.address may name another (a
// self-hosted telegram-bot-api).
const TelegramAPI = "https://api.telegram.org"

// telegramLimit is sendMessage's bound on text, after entity parsing.
const telegramLimit = 4096

// telegramToken is the form of a bot token (123456:ABC-...): checked, so
// that nothing else is spliced into the request path.
var telegramToken = regexp.MustCompile(`^[0-9]{1,20}:[A-Za-z0-9_-]{1,100}$`)

func telegramKind(cfg Config) (Notifier, error) {
	if cfg.Token == "" {
		return nil, errors.New(`a telegram provider needs the bot token in the key "token" of spec.secretRef`)
	}
	if !telegramToken.MatchString(cfg.Token) {
		return nil, errors.New(`the telegram token (key "token") is not a bot token of the form <digits>:<letters, digits, - and _>`)
	}
	chat, thread, _ := strings.Cut(cfg.Channel, ":")
	if chat == "" {
		return nil, errors.New("a telegram provider needs spec.channel, the chat_id (a number like -1001234567890, or @channelname), optionally :<message_thread_id> of a forum topic")
	}
	if thread != "" && !isDigits(thread) {
		return nil, errors.New("the message_thread_id after ':' in spec.channel of a telegram provider must be a number")
	}
	return &telegram{cfg: cfg, chat: chat, thread: thread}, nil
}

// telegram sends with the Bot API's sendMessage, in parse_mode HTML: its
// escaping is three entities, where MarkdownV2 reserves eighteen
// characters.
type telegram struct {
	cfg          Config
	chat, thread string
}

type telegramMessage struct {
	ChatID          string `json:"chat_id"`
	MessageThreadID string `json:"message_thread_id,omitempty"`
	Text            string `json:"text"`
	ParseMode       string `json:"parse_mode"`
	// LinkPreviewOptions turns previews off: an alert's URLs are not
	// what the reader needs a card of.
	LinkPreviewOptions telegramPreview `json:"link_preview_options"`
}

type telegramPreview struct {
	IsDisabled bool `json:"is_disabled"`
}

func (n *telegram) Post(ctx context.Context, e events.Event) error {
	msg := telegramMessage{
		ChatID:             n.chat,
		MessageThreadID:    n.thread,
		Text:               telegramHTML.render(alertLines(withoutUserInfo(e)), telegramLimit),
		ParseMode:          "HTML",
		LinkPreviewOptions: telegramPreview{IsDisabled: true},
	}
	a, err := n.cfg.do(ctx, request{
		method:      http.MethodPost,
		url:         strings.TrimSuffix(n.cfg.Address, "/") + "/bot" + n.cfg.Token + "/sendMessage",
		payload:     msg,
		contentType: "application/json",
		secret:      n.cfg.Token,
	})
	if err != nil {
		return err
	}
	// 400 (chat not found, bad text), 401 (token), 403 (bot removed) are
	// permanent, 429 (with parameters.retry_after) retried. The
	// description is free text: not repeated.
	return confirmed(n.cfg.Type, a, "ok")
}
