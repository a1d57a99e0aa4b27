// Package receiver serves Git host webhooks: POST /hook/<id>, where id is
// the hex SHA-256 of the Receiver's token, name and namespace (written to
// status.webhookPath by the Receiver reconciler), so the path is unguessable
// without the token and differs per Receiver.
//
// A generic-oidc Receiver has no Secret and no token: its path is the hex
// SHA-256 of its name and namespace, as in Flux, and not secret; each
// call authenticates with an ID token instead (below).
//
// Tokens are held in memory (Tokens), loaded by a TokenLoader that runs on
// every replica: it reads a Receiver's Secret by name when the Receiver
// appears, changes or is annotated with reconcile.plumb.dev/requestedAt,
// and every --secret-refresh-interval, and drops the token when the Secret
// or key is gone or the token is shorter than MinTokenBytes (32). Receivers
// come from the manager's cache. So everything before the signature check
// is read from memory: a forged call costs no API request.
//
// A call is checked in this order, each failure with its own answer: over
// the global concurrency cap (--receiver-max-concurrent) it is 429; an
// unknown path is 404; a suspended or not Ready Receiver is 503; over the
// Receiver's own rate limit (--receiver-rate-limit, --receiver-burst) it is
// 429; a body over 3 MiB is 413; a bad or missing signature or token is 401
// (github: X-Hub-Signature-256, falling back to X-Hub-Signature; gitlab:
// X-Gitlab-Token; bitbucket: X-Hub-Signature; generic-hmac: X-Signature
// sha1|sha256|sha512=<hex>; harbor: Authorization equals the token; nexus:
// X-Nexus-Webhook-Signature, the hex HMAC-SHA1 of the body; gcr: a
// Google-signed ID token, see IDTokens; generic-oidc: an ID token of one
// of spec.oidcProviders, see OIDCTokens; generic, dockerhub, quay, acr and
// cdevents: no check, the path is the secret); a body that is not the
// type's payload is 400 (dockerhub, quay, acr, nexus, gcr, cdevents: one
// JSON object with the fields the service always sends; cdevents also the
// CloudEvents binary-mode ce-* headers). Every comparison with the secret
// is constant-time. A GitHub ping, or an event type the Receiver does not
// list in spec.events (github, gitlab, bitbucket, and cdevents on
// ce-type), is answered 200 and triggers nothing, so the sender does not
// report the hook as failing. A panic while handling a call is answered
// 500, logged and counted (pkg/panics, where="webhook").
//
// gcr calls carry a Pub/Sub push ID token: IDTokens checks its RS256
// signature with go-jose against the issuer's JWKS (--gcr-jwks-url,
// Google's by default), and its iss (--gcr-oidc-issuer), aud (the Secret's
// audience), exp and email (the Secret's email, verified). The keys are
// cached for an hour with bounds on their number and size, fetched with a
// client bounded in time that follows no redirect, and fetched again for
// an unknown key id at most once a minute. go-oidc's remote key set would
// fetch for every unknown kid, which a forger chooses.
//
// generic-oidc calls carry Authorization: Bearer <ID token> (e.g. a GitHub
// Actions or GitLab CI token). OIDCTokens reads the token's iss unverified
// only to pick the spec.oidcProviders entry with that issuerURL (an issuer
// not listed is refused before anything is fetched, so a call cannot make
// the controller dial anywhere), finds the issuer's keys by OIDC
// discovery (<issuerURL>/.well-known/openid-configuration, at most 64
// KiB, whose issuer must be issuerURL, then its jwks_uri) and caches them
// per issuer exactly as gcr's (keySet: same size, count and refresh
// bounds; at most 64 issuers). Discovery and keys are fetched through
// the egress policy of Provider deliveries (notifier.AddressPolicy:
// --allow-private-provider-addresses, --allow-loopback-provider-addresses;
// link-local and metadata addresses never), following no redirect, 10 s
// each: the issuer is the Receiver author's choice, so it is an outbound
// call like a Provider's. The token must be signed with an asymmetric
// algorithm (RS, PS, ES, EdDSA; never HS or none) by a published key
// whose alg, if it names one, is the token's, and carry the provider's
// audience (notification-controller when unset), an expiry, and be within
// exp, nbf and iat with a minute of skew. Then the provider's variables
// (vars.<name>) and validations, CEL over claims, must all give true; the
// messages of those that do not are the 401's. spec.resourceFilter then
// reads the claims as claims. Flux verifies with coreos/go-oidc, which
// the module proxy serves; Plumb keeps go-jose because go-oidc's provider
// discovery and remote key set read answers of any size and fetch the
// keys again for every unknown kid, the bounds IDTokens already keeps.
//
// A valid call sets reconcile.plumb.dev/requestedAt on every resource the
// Receiver names (GitRepository, OCIRepository, HelmRepository, HelmChart,
// Kustomization or HelmRelease, by name, or "*" with matchLabels), which makes its controller reconcile at once, and records
// an event on the Receiver. Under --no-cross-namespace-refs resources in
// other namespaces are skipped. The answer and the event name the
// resources of the Receiver's own namespace and only count the others.
//
// A Receiver's spec.resourceFilter (filter.go, Flux's field) narrows
// those resources: a CEL expression over the resource's metadata (res)
// and the call's JSON body (req), compiled and bounded by celexpr. Every
// resource is resolved and filtered before the first is annotated, so a
// filter that fails on a call answers 400 and annotates nothing.
package receiver
