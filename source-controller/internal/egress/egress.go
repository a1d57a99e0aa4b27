package egress

import (
	"net/http"
	"net/netip"

	"plumb.dev/pkg/egress"
	"plumb.dev/pkg/netguard"
)

// AllowedNetworksFlag lists the networks of private and loopback
// addresses source-controller may connect to.
const AllowedNetworksFlag = "allowed-private-networks"

// Policy is the address policy of source-controller's connections with
// the networks of --allowed-private-networks; the zero value of allowed
// refuses every loopback and private address.
func Policy(allowed []netip.Prefix) netguard.Policy {
	return netguard.Policy{Allowed: allowed, LoopbackFlag: "--" + AllowedNetworksFlag, PrivateFlag: "--" + AllowedNetworksFlag}
}

// DialTimeout bounds a TCP connect (plumb.dev/pkg/egress).
const DialTimeout = egress.DialTimeout

// MaxErrorBodyBytes is how much of an error answer's body is read for its
// excerpt (plumb.dev/pkg/egress).
const MaxErrorBodyBytes = egress.MaxErrorBodyBytes

// Transport is plumb.dev/pkg/egress's: net/http's default transport
// connecting only where p allows.
func Transport(p netguard.Policy) *http.Transport { return egress.Transport(p) }

// Excerpts is plumb.dev/pkg/egress's: error answers' bodies cut to an
// excerpt.
func Excerpts(next http.RoundTripper) http.RoundTripper { return egress.Excerpts(next) }
