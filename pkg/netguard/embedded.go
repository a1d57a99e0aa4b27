package netguard

import "net/netip"

// The IPv6 ranges whose addresses carry an IPv4 address, and where.
var (
	// ::a.b.c.d, the deprecated IPv4-compatible form (RFC 4291 2.5.5.1);
	// :: and ::1 are unspecified and loopback, not IPv4.
	compatible = netip.MustParsePrefix("::/96")
	// ::ffff:0:a.b.c.d, the IPv4-translated form (RFC 2765).
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	// 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052): a NAT64
	// gateway connects to the IPv4 address in the last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// 64:ff9b:1::/48, NAT64 prefixes for local use (RFC 8215). The
	// operator picks the prefix length, /48 to /96, and with it where the
	// IPv4 address sits (RFC 6052 2.2, skipping bits 64 to 71); the
	// address alone does not say which, so every position is read, and
	// the range itself counts as private (Policy.check): a local NAT64 is
	// the site's own network.
	localNAT64 = netip.MustParsePrefix("64:ff9b:1::/48")
	// 2002::/16, 6to4 (RFC 3056): the IPv4 address of the relay's
	// destination in bits 16 to 47.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// 2001::/32, Teredo (RFC 4380): the server's IPv4 address in bits 32
	// to 63, the client's, inverted, in the last 32.
	teredo = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries, each
// an address a translator or relay may connect to on its behalf, so each
// is judged as if dialed itself. An IPv4 address carries none.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	at := func(i ...int) netip.Addr {
		return netip.AddrFrom4([4]byte{b[i[0]], b[i[1]], b[i[2]], b[i[3]]})
	}
	switch {
	case compatible.Contains(ip):
		if ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback() {
			return nil
		}
		return []netip.Addr{at(12, 13, 14, 15)}
	case translated.Contains(ip), nat64.Contains(ip):
		return []netip.Addr{at(12, 13, 14, 15)}
	case localNAT64.Contains(ip):
		var out []netip.Addr
		for _, v4 := range []netip.Addr{
			at(6, 7, 9, 10),    // a /48 prefix
			at(7, 9, 10, 11),   // /56
			at(9, 10, 11, 12),  // /64
			at(12, 13, 14, 15), // /96
		} {
			// A position another prefix length leaves zero reads as
			// 0.x.x.x, which no translator connects to: not a candidate.
			if !thisNetwork.Contains(v4) {
				out = append(out, v4)
			}
		}
		return out
	case sixToFour.Contains(ip):
		return []netip.Addr{at(2, 3, 4, 5)}
	case teredo.Contains(ip):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []netip.Addr{at(4, 5, 6, 7), netip.AddrFrom4(client)}
	}
	return nil
}
