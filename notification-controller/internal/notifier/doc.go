// Package notifier delivers one event to one provider: it renders the
// provider's payload (Slack, Discord and Microsoft Teams messages, the event
// JSON for generic webhooks, optionally HMAC-signed, a NATS message, or a
// chat service's message: chat.go) and sends it once. Retrying, rate limiting and acknowledging belong to the
// dispatcher; this package only says whether a failure is worth retrying
// (IsPermanent).
//
// Provider addresses and tokens are secrets (a Slack webhook URL is its own
// credential): no error this package returns contains them, so callers may
// log errors and put them in conditions and events. Nor does an error
// repeat what an endpoint answered: a failed delivery is "the slack
// endpoint answered 404 Not Found", the status code and Go's text for it,
// never the body or the server's reason phrase, which the endpoint chose.
// The one exception is an error code of a service's fixed vocabulary
// (Slack's "channel_not_found", Matrix's "M_FORBIDDEN"), quoted when it is
// short and only letters, digits, '_' and '.' (serviceCode): it says what
// to fix, and cannot carry a sentence.
// User info of every URL in an event's text is removed before it is sent
// (message.StripUserInfo).
//
// Where a delivery may go is the AddressPolicy's: checked in the dialer's
// Control function on the resolved IP, so DNS rebinding cannot get around
// it; link-local and cloud metadata addresses are always refused, loopback
// and private ranges by flag. NewHTTPClient builds the client the
// dispatcher uses: that dialer, no redirects followed, a timeout.
//
// A Provider with credentials (a Secret, or user info in its address) sends
// them over TLS only unless spec.insecure is set: ConfigFor refuses an
// http:// address (InsecureError), and the nats notifier requires TLS from
// the server before it sends a token or password.
//
// Chat services (chat.go) share one request path (Config.do: the
// dispatcher's client, a bounded answer, errors without the URL or a token
// the URL holds, as Telegram's path does) and one rendering of an alert as
// lines (chattext.go), which each service's markup escapes (HTML for
// Telegram, Matrix and Google Chat, Markdown for Webex and Zulip) and cuts
// to its length limit. Services that answer HTTP 200 with a refusal in the
// body (Slack's chat.postMessage, Lark, Rocket.Chat) have that body parsed.
// A slack Provider with a bot token posts through chat.postMessage, one
// thread per object with spec.threadPerObject: the threads are the
// dispatcher's ThreadStore, in memory and bounded, so they outlive the
// notifiers the dispatcher rebuilds but not a restart.
package notifier
