// Package renderfeed is the feed of renders between render-controller and
// sync-controller (docs/design/render-feed.md): render-controller's
// artifact server answers GET /renders with newline-delimited JSON
// records, one per render not yet in its object's status, and
// sync-controller writes each render into the status with the outcome of
// the sync that applies it — one status write per render instead of two.
//
// The Feed is the server's side: Offer adds a render (replacing the
// object's older one), Withdraw takes it back when render-controller
// writes the status itself, and a subscriber gets the pending records
// first (the snapshot) and then every offer and withdrawal as it happens.
// A record names the render statuses it replaces (StatusDigest), so that
// sync-controller never takes it over a write of render-controller's made
// after the offer whose withdrawal is still on its way.
// It is bounded: a few subscribers at once (one sync-controller per
// shard and its standby), records under MaxRecordBytes, one pending
// record per object, and a subscriber that falls MaxBacklog lines behind
// is cut off (it reconnects and reads the snapshot again).
//
// The Subscriber is the client's side: one connection with a backoff,
// each record checked (its artifact's URL must be under the feed's own
// address) before it is handed on; a cut connection, or a feed silent
// for longer than three heartbeats, reconnects.
package renderfeed
