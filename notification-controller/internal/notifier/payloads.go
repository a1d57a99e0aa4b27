package notifier

import (
	"strings"

	"plumb.dev/pkg/events"
)

// SlackPayload is a Slack incoming-webhook message with one colored
// attachment.
type SlackPayload struct {
	Channel     string            `json:"channel,omitempty"`
	Username    string            `json:"username,omitempty"`
	Text        string            `json:"text,omitempty"`
	Attachments []SlackAttachment `json:"attachments"`
}

// SlackAttachment is the colored block that carries the event.
type SlackAttachment struct {
	Color      string       `json:"color"`
	AuthorName string       `json:"author_name"`
	Title      string       `json:"title"`
	Text       string       `json:"text"`
	MrkdwnIn   []string     `json:"mrkdwn_in"`
	Fields     []SlackField `json:"fields,omitempty"`
	Footer     string       `json:"footer,omitempty"`
	Ts         int64        `json:"ts,omitempty"`
}

// SlackField is one titled value of an attachment.
type SlackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

func slackPayload(cfg Config, e events.Event) any {
	color := "good"
	if e.Severity == events.SeverityError {
		color = "danger"
	}
	att := SlackAttachment{
		Color:      color,
		AuthorName: slackEscape(objectTitle(e)),
		Title:      slackEscape(e.Reason),
		Text:       slackEscape(e.Message),
		MrkdwnIn:   []string{"text"},
		Footer:     slackEscape(e.ReportingController),
	}
	if !e.Timestamp.IsZero() {
		att.Ts = e.Timestamp.Unix()
	}
	for _, f := range facts(e) {
		att.Fields = append(att.Fields, SlackField{Title: slackEscape(f.Title), Value: slackEscape(f.Value), Short: len(f.Value) < 40 && f.Title != "Drift"})
	}
	return SlackPayload{Channel: cfg.Channel, Username: cfg.Username, Attachments: []SlackAttachment{att}}
}

// slackEscaper escapes what Slack reads as control sequences in message
// text: "<!channel>", "<!here>", "<@U123>" mentions and "<url|label>"
// links all start with "<". An event's text comes from Git (a commit
// message, a manifest's name) and from whoever can edit the objects, so
// none of it may ping a channel or dress up a link; Slack's documented
// escaping is these three entities.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// DiscordPayload is a Discord webhook message with one embed.
type DiscordPayload struct {
	Username string         `json:"username,omitempty"`
	Embeds   []DiscordEmbed `json:"embeds"`
}

// DiscordEmbed carries the event.
type DiscordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Color       int            `json:"color"`
	Fields      []DiscordField `json:"fields,omitempty"`
	Timestamp   string         `json:"timestamp,omitempty"`
	Footer      *DiscordFooter `json:"footer,omitempty"`
}

// DiscordField is one titled value of an embed.
type DiscordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

// DiscordFooter names the reporting controller.
type DiscordFooter struct {
	Text string `json:"text"`
}

func discordPayload(cfg Config, e events.Event) any {
	color := 0x2eb886 // green
	if e.Severity == events.SeverityError {
		color = 0xa30200 // red
	}
	embed := DiscordEmbed{
		Title:       objectTitle(e) + ": " + e.Reason,
		Description: e.Message,
		Color:       color,
	}
	if !e.Timestamp.IsZero() {
		embed.Timestamp = e.Timestamp.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	if e.ReportingController != "" {
		embed.Footer = &DiscordFooter{Text: e.ReportingController}
	}
	for _, f := range facts(e) {
		embed.Fields = append(embed.Fields, DiscordField{Name: f.Title, Value: f.Value})
	}
	return DiscordPayload{Username: cfg.Username, Embeds: []DiscordEmbed{embed}}
}

// TeamsPayload is a Microsoft Teams (workflow webhook) message holding one
// Adaptive Card.
type TeamsPayload struct {
	Type        string            `json:"type"`
	Attachments []TeamsAttachment `json:"attachments"`
}

// TeamsAttachment wraps the card.
type TeamsAttachment struct {
	ContentType string    `json:"contentType"`
	Content     TeamsCard `json:"content"`
}

// TeamsCard is an Adaptive Card.
type TeamsCard struct {
	Schema  string           `json:"$schema"`
	Type    string           `json:"type"`
	Version string           `json:"version"`
	Body    []map[string]any `json:"body"`
}

func teamsPayload(_ Config, e events.Event) any {
	color := "good"
	if e.Severity == events.SeverityError {
		color = "attention"
	}
	body := []map[string]any{
		{"type": "TextBlock", "text": objectTitle(e) + ": " + e.Reason, "weight": "bolder", "size": "medium", "color": color, "wrap": true},
		{"type": "TextBlock", "text": e.Message, "wrap": true},
	}
	if fs := facts(e); len(fs) > 0 {
		items := make([]map[string]string, len(fs))
		for i, f := range fs {
			items[i] = map[string]string{"title": f.Title, "value": f.Value}
		}
		body = append(body, map[string]any{"type": "FactSet", "facts": items})
	}
	return TeamsPayload{
		Type: "message",
		Attachments: []TeamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content: TeamsCard{
				Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
				Type:    "AdaptiveCard",
				Version: "1.4",
				Body:    body,
			},
		}},
	}
}
