package notifier

// chatKinds are the chat services besides the webhooks of notifier.go:
// googlechat, telegram, matrix, rocket, webex, lark, zulip.
var chatKinds = map[string]kind{}
