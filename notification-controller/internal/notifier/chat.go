package notifier

import (
	"encoding/json"
	"fmt"
	"reflect"

	notificationv1 "plumb.dev/api/notification/v1"
)

// chatKinds are the chat services besides the webhooks of notifier.go:
// googlechat, telegram, matrix, rocket, webex, lark, zulip, zoom. Each speaks its
// service's own API with plain net/http and small request types of its
// own: the official SDKs (where there is one in Go) bring far more than
// one message call needs, and none would use the dispatcher's client.
var chatKinds = map[string]kind{
	notificationv1.GoogleChatProvider: {build: googleChatKind},
	notificationv1.TelegramProvider:   {build: telegramKind, defaultAddress: TelegramAPI, token: telegramTokenNeed},
	notificationv1.MatrixProvider:     {build: matrixKind, token: matrixTokenNeed},
	notificationv1.RocketProvider:     {build: rocketKind},
	notificationv1.WebexProvider:      {build: webexKind, defaultAddress: WebexMessagesURL, token: webexTokenNeed},
	notificationv1.LarkProvider:       {build: larkKind},
	notificationv1.ZulipProvider:      {build: zulipKind},
	notificationv1.ZoomProvider:       {build: zoomKind, token: zoomTokenNeed},
}

// What the token of the chat services that need one is. (A slack Provider
// needs none: without one it posts to an incoming webhook.)
const (
	telegramTokenNeed = "a Telegram bot token"
	matrixTokenNeed   = "a Matrix access token"
	webexTokenNeed    = "a Webex bot's access token"
)

// confirmed is the verdict of a service whose 2xx answer must also say,
// with a top-level boolean field true, that it took the message
// (Telegram's "ok", Rocket.Chat's "success").
func confirmed(typ string, a answer, field string) error {
	if err := httpError(typ, a); err != nil {
		return err
	}
	// A struct of that one field, so the answer is read as a struct
	// with a `json:"<field>"` tag is (a name that differs in case only
	// matches too).
	ans := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Flag", Type: reflect.TypeFor[bool](), Tag: reflect.StructTag(`json:"` + field + `"`)},
	}))
	if json.Unmarshal(a.body, ans.Interface()) == nil && ans.Elem().Field(0).Bool() {
		return nil
	}
	return &PermanentError{Err: fmt.Errorf("the %s endpoint answered without %q: true", typ, field)}
}

// maxServiceCode bounds an error code quoted from an answer.
const maxServiceCode = 64

// serviceCode returns an error code of a service's fixed vocabulary
// (Slack's channel_not_found, Matrix's M_FORBIDDEN, Zulip's
// STREAM_DOES_NOT_EXIST) when it looks like one: short, and only letters,
// digits, '_' and '.'. Anything else (free text an endpoint chose) is
// dropped, so it never reaches a condition or event.
func serviceCode(s string) string {
	if s == "" || len(s) > maxServiceCode {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return ""
		}
	}
	return s
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
