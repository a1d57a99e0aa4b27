// Package message bounds the free text Plumb's controllers write for people
// to read: condition messages, status.sync.message, Kubernetes Events and the
// events of the NATS stream.
//
// A message often quotes what it failed on — a kustomize error carrying a
// whole patch from spec.patches, an API server's answer, a Git host's
// reply — so its size is chosen by whoever wrote that input. A 40 KB patch
// kustomize cannot parse makes an 80 KB error. Unbounded, such a message
// fills `kubectl describe` and every alert with the same patch, and comes
// close to or over the limits of what carries it: the API server refuses a
// condition message over 32,768 characters, a chat webhook one over a few
// thousand.
//
// Truncate cuts a message to MaxBytes at a UTF-8 rune boundary and ends it
// with a marker saying how many bytes were dropped:
//
//	kustomize build failed: trouble configuring builtin PatchTransformer … big: xxxx… (76,257 more bytes)
//
// The result, marker included, never exceeds MaxBytes; a message that fits
// is returned unchanged, so cutting twice changes nothing, and a cut message
// with a note appended is cut again with one marker, not two.
//
// The controllers do not call it at each call site but where every message
// passes: pkg/events.Recorder for events, pkg/reconcile.ApplyStatus (and
// BoundConditions, for notification-controller's patch helper) for status.
//
// # Why 4,096 bytes
//
//   - An eighth of the API server's cap on a condition message: a note
//     appended to a message read back from status still fits, and the six
//     conditions of a Kustomization together stay small beside the size
//     limit of one object.
//   - About fifty lines of `kubectl describe` at 80 columns: enough for a
//     kustomize or API server error with its file, path and the YAML around
//     it. The messages Plumb writes in normal operation are a few hundred
//     bytes and are never cut.
//   - The length limit of a Discord embed's description, the smallest text
//     limit of the notification targets, so an alert carries the event's
//     message whole.
//
// TruncateTo takes another bound, for a smaller field of the same kind: the
// before and after values of a drift event's changes (pkg/diff).
//
// # A remote's words
//
// Excerpt is what a message may quote of a remote's answer, such as the
// body of an error: 256 bytes of printable text on one line, without the
// control characters and escape sequences a hostile server would send to
// the terminals and chat clients that show it. source-controller puts every
// error answer of a Git host, chart repository or registry through it
// before any client reads it (source-controller/internal/egress).
//
// # Credentials in URLs
//
// StripUserInfo removes "user:password@" from every URL in a text, for
// messages that quote a URL someone wrote with credentials in it.
// notification-controller applies it to every event it forwards as an alert.
package message
