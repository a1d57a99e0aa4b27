// Package events is the event contract between Plumb's controllers and the
// notification-controller, and the way every controller reports what it did.
//
// # Schema (version plumb.dev/event/v1)
//
// An event is one JSON object (type Event) published on the JetStream subject
//
//	plumb.events.<kind>.<namespace>.<name>
//
// with <kind> in lower case (gitrepository, kustomization, receiver, …).
// Its fields:
//
//	schemaVersion        "plumb.dev/event/v1"; a consumer refuses other majors
//	id                   unique per event; also the Nats-Msg-Id header, so a
//	                     retried publish is stored once by JetStream
//	involvedObject       {apiVersion, kind, namespace, name, uid} of the object
//	severity             "info" or "error"
//	reason               a CamelCase reason, e.g. NewArtifact, FetchFailed,
//	                     DriftDetected
//	message              a sentence a person reads, at most
//	                     message.MaxBytes (4 KiB) long
//	revision             the source revision concerned, when there is one
//	metadata             extra string pairs (object counts, latency, …);
//	                     keys starting with "volatile." (VolatilePrefix)
//	                     hold details of the moment (counts at a timeout,
//	                     back-off durations, attempt numbers) that differ
//	                     between repeats of the same news; keys starting
//	                     with "event.toolkit.fluxcd.io/" (AnnotationPrefix)
//	                     are the object's annotations of that prefix, as
//	                     Flux carries them
//	changes              field-level differences, for drift events: object,
//	                     path, before, after (Secret values redacted), and
//	                     manager, the field manager of the foreign write
//	                     that owns the live value (optional, omitted when
//	                     nobody owns it, e.g. a removed field)
//	timestamp            when the controller emitted it (RFC 3339, UTC)
//	reportingController  e.g. source-controller
//	reportingInstance    the pod or host name of that controller
//
// # Repeated news
//
// A failure retried every retryInterval, a health check that flaps, a hook
// that fails on every attempt: each repeat is recorded again, and
// notification-controller sends an alert once per --rate-limit-interval for
// each distinct news (object, severity, reason, message, revision,
// metadata, changes). For that to work, a repeat of the same news must be
// the same event: the message holds only what identifies the news, and
// what describes the moment goes into volatile metadata (WithVolatile),
// which deduplication ignores and providers still show. A new failure, a
// recovery, a new revision is different news and is alerted at once.
//
// New optional fields may be added within v1; removing or changing the meaning
// of one needs v2.
//
// A Recorder writes each event twice (Record, Eventf): as a Kubernetes
// Event on the object (events.k8s.io/v1, through controller-runtime's
// mgr.GetEventRecorder, with the action KubeAction), and to a Publisher.
// RecordOnStream writes an info event to the Publisher only: news the
// object's status already tells a person, which is on the stream for
// alerts and the UI and costs the API server nothing (render-controller's
// Rendered). Every failure is a Kubernetes Event. Which events go where,
// and why, is in docs/design/events.md. Publishing never blocks or fails
// a reconcile.
//
// The Recorder is where every event message of every controller passes, so
// it is where messages are bounded: one longer than message.MaxBytes (a
// kustomize error quoting a 40 KB patch) is cut there with
// message.Truncate, which ends it with "… (12,345 more bytes)". The
// Kubernetes Event carries the same text cut shorter, to KubeNoteMaxBytes,
// the most the API server accepts in an Event's note.
//
// # Publishing (JetStreamPublisher)
//
// NewJetStreamPublisher (or NewPublisher, which returns a NopPublisher when
// --nats-url is empty) connects to NATS and creates or updates the stream
// (--nats-stream, subjects plumb.events.>, --nats-stream-max-age,
// --nats-stream-max-bytes, file storage, oldest discarded first, a
// two-minute duplicate window, --nats-stream-replicas copies on a NATS
// cluster, an existing stream scaled to it) idempotently, so the
// controllers may start in any order. It neither fails nor waits when NATS is down: the connection
// retries forever.
//
// Publish appends to a bounded in-memory queue (--events-queue-size) and
// returns. One background sender stores the queue in order, one event at a
// time, retrying the head with exponential backoff (100ms to 5s) while NATS
// is unreachable, so the events about one object stay in order. When the
// queue is full the oldest event is dropped, counted in
// plumb_events_dropped_total; the drops of one outage are named in one
// error-level log line when it ends ("events were dropped while NATS could
// not take them", with their number and their reasons), not one line per
// event. An outage that fills less than the queue loses nothing: the
// queue is the documented buffer, --events-queue-size events (1,000 by
// default) per controller process. The Nats-Msg-Id header carries
// the event id, so an event sent again after a lost acknowledgement is
// stored once. Close, on shutdown, waits for the queue to drain until its
// context ends. A panic while sending (in the NATS client, on what the
// server answered) drops that one event, counted in
// plumb_events_dropped_total and logged by pkg/panics; the sender goes on.
//
// # Connecting (Connect)
//
// Connect makes the NATS connection of every publisher and of
// notification-controller's consumer, with the options of --nats-url (one
// server, or a cluster's servers as a comma-separated list, of which the
// client picks one at random and moves to another when it is lost) and
// the authentication and TLS flags of options.NATSAuth (a credentials
// file, an NKey seed, a user and password file, a token file, a CA bundle,
// a client certificate, a reply prefix), every secret read from a file on
// every connect so a rotated Secret needs no restart. It retries forever,
// after refused credentials too. IsRefused tells a refusal
// (authentication, authorization, a permission violation, TLS on either
// side) from an unreachable server: a refusal is logged at error level
// ("NATS refused this client", with the server's reason) when it starts
// and once a minute while it lasts, and Conn.Check, the controllers'
// "nats" readiness check (JetStreamPublisher.Check), fails with it until
// the connection or an operation succeeds. An unreachable server is
// logged at info level and leaves the controller ready. A server that
// vanished without closing the connection (its node lost) is given up
// within 30 seconds: two pings ten seconds apart left unanswered.
//
// On a NATS cluster (deploy/components/nats-cluster,
// docs/design/nats-cluster.md) a lost server costs nothing: the clients
// reconnect to another, the sender retries the event it was storing, and
// the stream, which already has it if only the acknowledgement was lost,
// stores it once by its Nats-Msg-Id.
//
// The users and permissions Plumb's own NATS server gives each role are in
// deploy/nats/accounts.conf: publishers may publish on plumb.events.> and
// create or update the stream, and nothing else.
//
// Metrics (controller label): plumb_events_published_total,
// plumb_events_dropped_total (queue full, or unsent at shutdown) and
// plumb_events_queue_length.
package events
