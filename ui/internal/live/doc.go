// Package live serves GET /api/live, the Server-Sent Events stream that
// keeps open pages current without polling. A Hub takes every Change — from
// the UI's watch of the overview's kinds (kinds.All) (package overview) and from any
// ChangeSource (package stream: an event stored on JetStream) — and hands
// it to each connected page whose user may `get` the object (an access
// review made as that user, cached a minute): `event: change` with
// {"kind", "namespace", "name", "reason"}. A comment line every 15 s keeps
// proxies from closing an idle stream.
//
// Each connection has a buffer of BufferSize changes. A page that does not
// read them as fast as they come (a stalled tab, a slow link) is
// disconnected rather than left to fall behind or to make the Hub wait:
// its EventSource reconnects by itself (after the retry the stream
// announces), and a page refetches what it shows when its stream (re)opens,
// so a dropped connection costs one refetch and no change is silently lost.
//
// Each open stream holds a goroutine, a buffer and a connection, so a
// session may have MaxStreamsPerSession open and the server MaxStreams;
// beyond, 429, and a stream's place is freed when it disconnects.
package live
