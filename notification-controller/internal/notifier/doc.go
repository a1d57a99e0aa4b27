// Package notifier delivers one event to one provider: it renders the
// provider's payload (Slack, Discord and Microsoft Teams messages, the event
// JSON for generic webhooks, optionally HMAC-signed, a NATS message, a
// commit status, a pull request comment, a paging or incident tool's
// request, a chat service's message: chat.go, or a cloud message bus's:
// bus.go) and sends it once. Retrying, rate limiting and
// acknowledging belong to the dispatcher; this package only says whether a failure is worth retrying
// (IsPermanent), or that the provider had nothing to do (Skipped).
//
// Commit status providers (commitstatus.go: github, gitlab, gitea,
// bitbucket, bitbucketserver, azuredevops) post a Kustomization's or
// HelmRelease's sync outcome to the commit of the event's revision:
// statusOf decides the commit, the state (error: failure; Progressing:
// pending; other info: success) and the context (kind/namespace/name and
// the Provider's UID prefix), or skips the event; each host's file puts
// that in its API's words and derives its endpoint from the repository
// URL in the address, so a wrong address fails New, at the Provider's
// reconcile. A Provider's spec.commitStatusExpr (statusexpr.go, Flux's
// CEL over event, alert and provider) names the status instead; the
// dispatcher passes the Alert in the delivery's context (WithAlert). Hosts that keep every status (or refuse a repeat) are asked
// first whether the commit already shows it (statusReader). githubdispatch sends any event as a repository_dispatch.
// They use plain net/http through hostapi.go's call (Config.do, with the
// hosts' hints for a refused status and GitHub's rate-limit 403) rather
// than the hosts' SDKs: one or two calls of a few fields each, and an SDK's own transport
// (oauth2, retries) would bypass the dispatcher's client, its address
// policy and its single attempt per Post.
//
// Change request comment providers (comment.go, commenthosts.go:
// githubpullrequestcomment, gitlabmergerequestcomment,
// giteapullrequestcomment) keep one comment per object and Provider on
// the pull or merge request of the event's change_request metadata (the
// object's event.toolkit.fluxcd.io/change_request annotation, which
// pkg/events carries and the dispatcher sends without its prefix), and
// skip an event without it. The comment holds a hidden marker naming the
// Provider's UID and the object; each event lists the request's comments,
// edits the token's user's comment with the marker, or writes one. They
// share the commit statuses' address parsing, API bases, credentials and
// call.
//
// The paging and incident tools (paging.go: alertmanager, pagerduty,
// opsgenie, grafana, datadog, sentry, incident.io, and otel's OTLP/HTTP
// spans) speak each service's own API, one file per service. To them an event is a failure (severity
// error), a success (an info reason that says the object works again:
// successReasons) or progress; pagerduty, opsgenie and incident.io keep
// one incident per object (incidentKey; incident.io the object's UID, as
// Flux), opened by a failure and closed by the next success, and send
// nothing for progress. They are plain net/http with
// small request types of their own rather than the services' SDKs: each
// is one or two JSON requests, and a delivery must go through the
// dispatcher's client (its dialer checks the address policy), be sent
// exactly once and report the answer's status code. The Sentry SDK sends
// from a queue of its own and retries or drops by itself without telling
// the caller what Sentry answered; the Datadog and PagerDuty clients are
// large for one endpoint and put the service's answer into their errors,
// which this package must not repeat.
//
// Provider addresses and tokens are secrets (a Slack webhook URL is its own
// credential): no error this package returns contains them, so callers may
// log errors and put them in conditions and events. Nor does an error
// repeat what an endpoint answered: a failed delivery is "the slack
// endpoint answered 404 Not Found", the status code and Go's text for it,
// never the body or the server's reason phrase, which the endpoint chose.
// The one exception is an error code of a service's fixed vocabulary
// (Slack's "channel_not_found", Matrix's "M_FORBIDDEN"), quoted when it is
// short and only letters, digits, '_' and '.' (serviceCode): it says what
// to fix, and cannot carry a sentence.
// User info of every URL in an event's text is removed before it is sent
// (message.StripUserInfo).
//
// Where a delivery may go is the AddressPolicy's: checked in the dialer's
// Control function on the resolved IP, so DNS rebinding cannot get around
// it; link-local and cloud metadata addresses are always refused, loopback
// and private ranges by flag. NewHTTPClient builds the client the
// dispatcher uses: that dialer, no redirects followed, a timeout.
//
// A Provider's certSecretRef (its CA, a client certificate) and
// proxySecretRef (transport.go) give its notifier a client of its own: a
// clone of the dispatcher's transport, so the address policy's dialer,
// the timeout and the refusal of redirects stay, and every HTTP type
// honours them without knowing. Through a proxy, the policy judges the
// proxy's address, as with HTTPS_PROXY.
//
// A Provider with credentials (a Secret, or user info in its address) sends
// them over TLS only unless spec.insecure is set: ConfigFor refuses an
// http:// address (InsecureError), and the nats notifier requires TLS from
// the server before it sends a token or password.
//
// Every HTTP request goes one way (request.go's Config.do): the
// dispatcher's client, user info of the URL sent as basic credentials, a
// bounded answer, errors without the URL or a token the URL holds (as
// Telegram's path does). Config.send adds the verdict of the services whose
// status code says it all (webhooks, paging tools); the chat services and
// the Git hosts read the answer themselves (statusError, call).
//
// The cloud message buses (bus.go) hand the event's JSON to a service for
// other systems to consume, as nats does: googlepubsub (pubsub.go)
// publishes it on a Pub/Sub topic with the Secret's headers as
// attributes, authenticated by an access token of a service account's
// JSON key (googleauth.go: the JWT bearer grant, the token kept per key
// across the notifiers the dispatcher rebuilds); azureeventhub
// (eventhub.go) sends it to an Event Hub with a shared access signature
// of a connection string's key, or a bearer token. Their address is the
// service's own form, not a URL (kind.ownAddress). Both are the services'
// REST APIs through Config.do rather than their SDKs, for the reasons
// above; the token exchange too, as oauth2's token source would send it
// on its own and word its errors with the answer.
//
// A zoom Provider (zoom.go) posts Flux's rich message to a Zoom Team Chat
// Incoming Webhook with its verification token.
//
// Chat services (chat.go) share one rendering of an alert as
// lines (chattext.go), which each service's markup escapes (HTML for
// Telegram, Matrix and Google Chat, Markdown for Webex and Zulip) and cuts
// to its length limit. Services that answer HTTP 200 with a refusal in the
// body (Slack's chat.postMessage, Lark, Rocket.Chat) have that body parsed.
// A slack Provider with a bot token posts through chat.postMessage, one
// thread per object with spec.threadPerObject: the threads are the
// dispatcher's ThreadStore, in memory and bounded, so they outlive the
// notifiers the dispatcher rebuilds but not a restart.
package notifier
