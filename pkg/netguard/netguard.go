package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Policy decides which IP addresses may be connected to.
//
// Always refused: unspecified, "this network" (0.0.0.0/8), link-local
// (169.254.0.0/16, fe80::/10, where clouds serve instance metadata and
// credentials), multicast and broadcast, and the metadata and platform
// addresses outside those ranges (100.100.100.200, fd00:ec2::254,
// 168.63.129.16). Loopback (127.0.0.0/8, ::1) only with AllowLoopback,
// private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) only
// with AllowPrivate, either also in a network of Allowed. An IPv6 address
// that carries an IPv4 address is judged as that address too
// (embeddedIPv4: mapped, compatible, translated, NAT64, 6to4 and Teredo
// forms).
type Policy struct {
	AllowPrivate  bool
	AllowLoopback bool
	// Allowed are networks where loopback and private addresses are
	// allowed without AllowLoopback or AllowPrivate: an operator's
	// private registry or Git server. They lift only those two refusals:
	// the addresses always refused stay refused whatever is listed.
	Allowed []netip.Prefix
	// LoopbackFlag and PrivateFlag name the controller's flags that allow
	// those ranges, for the refusal's message.
	LoopbackFlag, PrivateFlag string
}

// RefusedAddressError is a connection the Policy did not allow. Retrying
// does not help.
type RefusedAddressError struct {
	Addr netip.Addr
	// Via is the IPv6 address that carries Addr, when Addr was found
	// inside one.
	Via netip.Addr
	// Why names the range, e.g. "link-local (cloud metadata)".
	Why string
}

func (e *RefusedAddressError) Error() string {
	if e.Via.IsValid() {
		return fmt.Sprintf("address %s (carried by IPv6 address %s) refused: %s", e.Addr, e.Via, e.Why)
	}
	return fmt.Sprintf("address %s refused: %s", e.Addr, e.Why)
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	broadcast   = netip.MustParseAddr("255.255.255.255")
	// metadata are instance metadata and platform endpoints outside the
	// link-local ranges: Alibaba Cloud, AWS over IPv6 (inside fc00::/7),
	// Azure's WireServer.
	metadata = map[netip.Addr]string{
		netip.MustParseAddr("100.100.100.200"): "Alibaba Cloud metadata",
		netip.MustParseAddr("fd00:ec2::254"):   "AWS metadata",
		netip.MustParseAddr("168.63.129.16"):   "Azure platform endpoint",
	}
)

// Check returns a *RefusedAddressError when ip may not be reached: ip
// itself, or an IPv4 address it carries.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap()
	for _, v4 := range embeddedIPv4(ip) {
		if err := p.check(v4); err != nil {
			err.(*RefusedAddressError).Via = ip
			return err
		}
	}
	return p.check(ip)
}

func (p Policy) check(ip netip.Addr) error {
	refuse := func(why string) error { return &RefusedAddressError{Addr: ip, Why: why} }
	if why, ok := metadata[ip]; ok {
		return refuse(why)
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), thisNetwork.Contains(ip):
		return refuse("unspecified address")
	case ip.IsLinkLocalUnicast():
		return refuse("link-local (cloud metadata)")
	case ip.IsMulticast(), ip == broadcast:
		return refuse("multicast or broadcast")
	case ip.IsLoopback():
		if !p.AllowLoopback && !p.listed(ip) {
			return refuse(allowedBy("loopback", p.LoopbackFlag))
		}
	case ip.IsPrivate(), sharedSpace.Contains(ip), localNAT64.Contains(ip):
		if !p.AllowPrivate && !p.listed(ip) {
			return refuse(allowedBy("private", p.PrivateFlag))
		}
	}
	return nil
}

func (p Policy) listed(ip netip.Addr) bool {
	for _, n := range p.Allowed {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseNetworks reads a list of networks for Policy.Allowed: CIDRs
// (10.1.0.0/16, fd00:1::/64) or single addresses (10.1.2.3). A CIDR with
// host bits set (10.1.2.3/16) is refused: it is more likely a typo than
// the network it would mean.
func ParseNetworks(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
			}
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", s, err)
		}
		if n != n.Masked() {
			return nil, fmt.Errorf("%q has host bits set: write %s", s, n.Masked())
		}
		out = append(out, n)
	}
	return out, nil
}

func allowedBy(what, flag string) string {
	if flag == "" {
		return what
	}
	return what + " (" + flag + " allows it)"
}

// Control is a net.Dialer Control function: address is the resolved
// ip:port about to be connected to.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dialing %q: not an IP address", host)
	}
	return p.Check(ip)
}

// Dialer returns a dialer that connects only where the policy allows.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}
