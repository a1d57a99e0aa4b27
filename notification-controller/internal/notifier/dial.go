package notifier

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"time"

	"plumb.dev/pkg/netguard"
)

// AddressPolicy decides which IP addresses a delivery may connect to: the
// ranges of netguard.Policy, loopback and private ones by
// notification-controller's flags.
type AddressPolicy struct {
	AllowPrivate  bool
	AllowLoopback bool
}

// RefusedAddressError is a connection the AddressPolicy did not allow.
// Retrying does not help: IsPermanent reports it.
type RefusedAddressError = netguard.RefusedAddressError

func (p AddressPolicy) guard() netguard.Policy {
	return netguard.Policy{
		AllowPrivate: p.AllowPrivate, AllowLoopback: p.AllowLoopback,
		LoopbackFlag: "--allow-loopback-provider-addresses", PrivateFlag: "--allow-private-provider-addresses",
	}
}

// Check returns a *RefusedAddressError when ip may not be reached.
func (p AddressPolicy) Check(ip netip.Addr) error { return p.guard().Check(ip) }

// Dialer returns a dialer that connects only where the policy allows.
func (p AddressPolicy) Dialer() *net.Dialer { return p.guard().Dialer(10 * time.Second) }

// NewHTTPClient returns the client deliveries go through: connections
// only where the policy allows, redirects never followed (a 3xx answer is
// a failed delivery: following it would carry the payload and headers to
// an address nobody configured), and no request longer than timeout.
// Proxies from the environment (HTTPS_PROXY) are used; the policy then
// applies to the proxy's address.
func NewHTTPClient(p AddressPolicy, timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.Dialer().DialContext
	t.MaxIdleConnsPerHost = 4
	return &http.Client{
		Transport:     t,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// isRefused reports whether err is, or wraps, a refused address.
func isRefused(err error) bool {
	var r *RefusedAddressError
	return errors.As(err, &r)
}
