// Package dispatch turns the event stream into alerts. A Dispatcher reads
// the JetStream events stream with a durable pull consumer and explicit
// acknowledgements, finds the Alerts an event matches (Matcher), and puts
// one delivery per matching Alert on its Provider's queue; package notifier
// sends it.
//
// The package is split by what it does, each part a type or set of files
// that knows nothing of the others, joined by the Dispatcher's routing
// (dispatcher.go):
//
//   - consuming (consume.go, stream): the durable pull consumer, the
//     events in flight and kept alive, and their end — acknowledged with
//     the server's confirmation, terminated, handed back, or set aside at
//     shutdown and handed back in stream order;
//   - configuration (configs.go, configs; match.go, Matcher): the Alerts
//     an event matches, read from the manager's cache with the involved
//     object's labels, and each Provider's notifier, its Secret read at
//     most once per ten seconds;
//   - delivering (deliver.go, queue.go, ratelimit.go): one FIFO queue per
//     Provider, the retries with backoff within the Provider's timeout, the
//     rate limit and the memory of what each provider took.
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
//   - An event delivered again is not sent again: when an acknowledgement
//     is lost (the NATS server that led the consumer went away before it
//     had it, or before its cluster peers did), JetStream delivers the
//     event again. The dispatcher remembers, by Alert, Provider and event
//     id, what each provider took for ten ack waits (--nats-ack-wait; at
//     most 100,000 entries, the oldest forgotten first), and acknowledges
//     such a redelivery without sending it, whatever
//     --rate-limit-interval says. With JetStream's at-least-once delivery
//     this makes each event reach a provider once, within that window and
//     the life of the process (docs/design/nats-cluster.md).
//   - One Provider cannot delay another: each Provider (namespace/name) has
//     its own FIFO queue and goroutine, so one that is slow, down or
//     retrying holds only its own deliveries; routing workers never wait
//     for a delivery. Every attempt ends within the Provider's spec.timeout
//     cut to --max-provider-timeout (the deadline does not depend on the
//     caller's context, which shutdown cancels).
//   - Events about one object are delivered to a Provider in order: the
//     subject (one per object) picks the routing worker, which handles its
//     events one at a time and queues them in stream order.
//   - Identical events (same object, severity, reason, message, revision,
//     metadata and changes; ids, timestamps and volatile metadata aside:
//     events.Fingerprint) sent to the same provider within --rate-limit-interval
//     are sent once. So each distinct news about an object reaches a
//     channel at most once per interval however often it repeats: a
//     health check flapping Degraded, Recovered, Degraded… alerts one
//     Degraded and one Recovered, a hook failing on every retry one
//     failure. Metadata keys starting with "volatile." (events.VolatilePrefix)
//     hold what differs between repeats of one news (a back-off figure,
//     replica counts at a timeout); they are shown but not compared. The
//     check sits before the provider, so it holds for every provider type.
//   - Under --no-cross-namespace-refs an Alert matches only events of its
//     own namespace, whatever its status says (Matcher).
//   - A panic while matching an event (untrusted input) terminates that
//     event, so it is not delivered again to panic again; a panic while
//     delivering gives that delivery up with a Warning on the Alert. Both
//     are logged and counted by pkg/panics (where="event match", "alert
//     delivery"), and the consumer goes on.
//
// A provider that has nothing to do with an event (a commit status
// provider given an event without a Git commit: notifier.Skipped) has
// handled it: the reason is logged at info level, the event is
// acknowledged for that provider, not retried, not counted as a failure,
// and no DeliveryFailed event is recorded.
//
// What an Alert sends is the event with its eventMetadata added, the
// object's event.toolkit.fluxcd.io/ annotations without that prefix
// (below the eventMetadata, as Flux: sentMetadata), and its
// summary and message templates rendered (package alerttext), for every
// provider type; a template that fails on an event sends it untemplated
// and logs why: a template never drops an event.
//
// Deliveries go through notifier.NewHTTPClient: no redirects, and only to
// addresses the AddressPolicy (--allow-private-provider-addresses,
// --allow-loopback-provider-addresses) allows, checked at dial time.
//
// A provider's Secret is read once per ten seconds at most while its
// deliveries succeed, and again before the retry of a failed delivery, so
// bursts of events cost no API request each and a rotated token or address
// takes effect within seconds.
//
// The dispatcher owns the memory of Slack threads (notifier.ThreadStore,
// one bounded set per Provider UID) and hands each threading Provider's
// notifier its set, so a rebuilt notifier (a rotated Secret, a new
// generation) keeps replying in the same threads.
//
// A fresh consumer starts with the events published after it was created,
// so installing notification-controller does not replay the stream's history
// as alerts.
//
// Events that notification-controller itself reports about Alerts and
// Providers (e.g. a delivery that gave up) are not dispatched, so a failing
// provider cannot feed a loop of alerts about itself.
package dispatch
