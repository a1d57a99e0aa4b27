// Package dispatch turns the event stream into alerts. A Dispatcher reads
// the JetStream events stream with a durable pull consumer and explicit
// acknowledgements, finds the Alerts an event matches (Match), and delivers
// it to each matching Alert's Provider through package notifier.
//
// Guarantees, and how they are kept:
//
//   - Nothing is lost: an event is acknowledged only after every matching
//     provider accepted it or gave up after its retries (a Warning event on
//     the Alert says so). The acknowledgement is confirmed by the server
//     (double ack), and while a delivery is retried the dispatcher tells
//     JetStream it is still working on the event, so it is not redelivered
//     meanwhile. An event not acknowledged when the controller stops is
//     negatively acknowledged and goes to the next instance at once.
//   - Nothing acknowledged is delivered again: JetStream never redelivers
//     an acknowledged message, and the consumer is durable, so a restart
//     resumes after the last acknowledged event. (A delivery interrupted by
//     shutdown while being retried is tried again in full by the next
//     instance, so a provider that already took it may see it twice.)
//   - Events about one object are delivered in order: the subject (one per
//     object) picks the worker, and each worker handles its events one at a
//     time.
//   - Identical events (same object, severity, reason, message, revision,
//     metadata and changes; ids and timestamps aside) sent to the same
//     provider within the rate-limit interval are sent once.
//
// A provider's Secret is read once per ten seconds at most while its
// deliveries succeed, and again before the retry of a failed delivery, so
// bursts of events cost no API request each and a rotated token or address
// takes effect within seconds.
//
// A fresh consumer starts with the events published after it was created,
// so installing notification-controller does not replay the stream's history
// as alerts.
//
// Events that notification-controller itself reports about Alerts and
// Providers (e.g. a delivery that gave up) are not dispatched, so a failing
// provider cannot feed a loop of alerts about itself.
package dispatch
