package notifier

import "fmt"

// kind is what this package knows of one provider type.
type kind struct {
	// build returns the notifier for a resolved configuration, or says
	// what the configuration lacks (without quoting a secret).
	build func(Config) (Notifier, error)
	// defaultAddress is the service's public API endpoint, used when
	// neither spec.address nor the Secret gives an address (Telegram,
	// PagerDuty, ...). Empty means an address is required.
	defaultAddress string
	// token, when set, says what the Secret's token is for a type that
	// cannot work without one ("the HMAC signing key", "a Datadog API
	// key"): ConfigFor reports its absence as a Secret not ready, which
	// is retried, rather than a spec that cannot work.
	token string
	// nats marks an address that is a nats:// or tls:// URL rather than
	// http:// or https://.
	nats bool
	// ownAddress marks an address that is no URL but the service's own
	// form (a GCP project ID, an Event Hubs connection string): build
	// checks it, and deliveries go to the service's https:// endpoint,
	// so ConfigFor neither parses it nor asks for spec.insecure.
	ownAddress bool
}

// kinds holds every provider type, gathered from the tables of the
// groups: the webhooks and NATS (notifier.go), commit statuses
// (commitstatus.go), change request comments (comment.go), paging and
// incident tools (paging.go), chat services (chat.go) and cloud message
// buses (bus.go). A type listed twice is a programming error.
var kinds = func() map[string]kind {
	all := map[string]kind{}
	for _, group := range []map[string]kind{coreKinds, commitStatusKinds, commentKinds, pagingKinds, chatKinds, busKinds} {
		for typ, k := range group {
			if _, dup := all[typ]; dup {
				panic(fmt.Sprintf("provider type %q is listed twice", typ))
			}
			all[typ] = k
		}
	}
	return all
}()
