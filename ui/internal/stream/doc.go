// Package stream is the UI's memory of Plumb's event stream: it reads the
// JetStream stream the controllers publish to (plumb.events.>, pkg/events)
// from its first stored event with an ephemeral ordered consumer, then
// follows it, and keeps the newest events in a bounded in-memory Index that
// serves the event history (GET /api/events) and the drift timeline (GET
// /api/drift) of docs/design/ui.md, and tells the live stream (/api/live)
// what changed (Changes).
//
// The history is JetStream's, not the UI's: the UI stores nothing, and
// after a restart of the UI (or of the controllers) the Index is read again
// from the stream, so the timeline survives both. The ordered consumer
// leaves nothing behind on the server, which is why the UI may read with the
// NATS user `reader` of deploy/nats/accounts.conf, as `plumb events` does.
//
// Everything on the stream is treated as hostile input: an event that does
// not decode (pkg/events.Decode) or is larger than MaxEventBytes is
// skipped, and the Index holds at most Config.MaxEvents events and
// Config.MaxBytes bytes of them (the events' encoded size), dropping the
// oldest first. Queries are a filter over that memory, newest first, each
// entry shown only when the Authorizer says the requesting user may get the
// event's involved object, so the stream never shows more than the API
// server would: asked first of the kind in the namespace, then of the
// object. A drift change's values are shown only for an object the user
// may get (Authorizer.MayGetApplied), else marked hidden. One page is
// bounded in time (Deadline), checks (MaxChecks) and events looked at
// (MaxScanned): past a bound it answers what it has, with before set where
// it stopped, so a user who may see little cannot make the server scan
// the whole index with a review per object.
//
// When NATS goes away the connection (pkg/events.Connect) retries forever,
// and the reader starts a new ordered consumer after the last sequence it
// stored, so no event is indexed twice or missed while the stream keeps
// it. A stream that was deleted and created again (its creation time
// changed; its sequences start over) is read again from its start, the
// Index emptied first. Until the stored history has been read once
// (Synced), answers say "loading": true. Check is the UI's readiness
// check for NATS: it fails only while the server refuses the UI.
package stream
