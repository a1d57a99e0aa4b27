// Package receiver serves Git host webhooks: POST /hook/<id>, where id is
// the hex SHA-256 of the Receiver's token, name and namespace (written to
// status.webhookPath by the Receiver reconciler), so the path is unguessable
// without the token and differs per Receiver.
//
// A call is checked in this order, each failure with its own answer: an
// unknown path is 404; a suspended or not Ready Receiver is 503; a body over
// 3 MiB is 413; a bad or missing signature or token is 401 (github:
// X-Hub-Signature-256, falling back to X-Hub-Signature; gitlab:
// X-Gitlab-Token; bitbucket: X-Hub-Signature; generic-hmac: X-Signature
// sha1|sha256|sha512=<hex>; generic: no check). Every comparison with the
// secret is constant-time. A GitHub ping, or an event type the Receiver
// does not list in spec.events, is answered 200 and triggers nothing, so
// the Git host does not report the hook as failing.
//
// A valid call sets reconcile.plumb.dev/requestedAt on every resource the
// Receiver names (GitRepository or Kustomization, by name, or "*" with
// matchLabels), which makes its controller reconcile at once, and records
// an event on the Receiver.
package receiver
