// Package notifier delivers one event to one provider: it renders the
// provider's payload (Slack, Discord and Microsoft Teams messages, the event
// JSON for generic webhooks, optionally HMAC-signed, or a NATS message) and
// sends it once. Retrying, rate limiting and acknowledging belong to the
// dispatcher; this package only says whether a failure is worth retrying
// (IsPermanent).
//
// Provider addresses and tokens are secrets (a Slack webhook URL is its own
// credential): no error this package returns contains them, so callers may
// log errors and put them in conditions and events.
package notifier
