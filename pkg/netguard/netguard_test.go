package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The refusal names the range and the flag that would allow it, and the
// dialer refuses before a byte is sent: a listener on loopback sees no
// connection.
func TestDialerRefusesBeforeConnecting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()

	strict := Policy{LoopbackFlag: "--allow-loopback-kubeconfig-servers"}
	_, err = strict.Dialer(time.Second).DialContext(context.Background(), "tcp", l.Addr().String())
	var refused *RefusedAddressError
	if !errors.As(err, &refused) {
		t.Fatalf("dialing loopback under a strict policy: got %v, want a RefusedAddressError", err)
	}
	if want := "loopback (--allow-loopback-kubeconfig-servers allows it)"; refused.Why != want {
		t.Errorf("Why = %q, want %q", refused.Why, want)
	}
	select {
	case <-accepted:
		t.Fatal("the listener accepted a connection the policy refused")
	case <-time.After(100 * time.Millisecond):
	}

	loopback := Policy{AllowLoopback: true}
	c, err := loopback.Dialer(time.Second).DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dialing loopback when allowed: %v", err)
	}
	c.Close()
	<-accepted
}

func TestCheck(t *testing.T) {
	open := Policy{AllowPrivate: true, AllowLoopback: true}
	for _, tc := range []struct {
		ip, why string // why is empty when open allows it
	}{
		{"169.254.169.254", "link-local (cloud metadata)"},
		{"::ffff:169.254.169.254", "link-local (cloud metadata)"},
		{"64:ff9b::a9fe:a9fe", "link-local (cloud metadata)"},
		{"fd00:ec2::254", "AWS metadata"},
		{"100.100.100.200", "Alibaba Cloud metadata"},
		{"168.63.129.16", "Azure platform endpoint"},
		{"0.0.0.0", "unspecified address"},
		{"ff02::1", "multicast or broadcast"},
		{"127.0.0.1", ""},
		{"10.0.0.1", ""},
		{"93.184.215.14", ""},
	} {
		err := open.Check(netip.MustParseAddr(tc.ip))
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s: refused (%v), want allowed", tc.ip, err)
		case tc.why != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.why)):
			t.Errorf("%s: got %v, want refused: %s", tc.ip, err, tc.why)
		}
	}
	if err := (Policy{PrivateFlag: "--allow-private"}).Check(netip.MustParseAddr("192.168.1.1")); err == nil ||
		!strings.Contains(err.Error(), "private (--allow-private allows it)") {
		t.Errorf("a private address under a policy without AllowPrivate: got %v", err)
	}
}

// Every IPv6 form that carries an IPv4 address is judged as that
// address: the loopback, metadata and private ones refused, a public one
// allowed as the public address would be.
func TestIPv6FormsCarryingIPv4AreJudgedAsIt(t *testing.T) {
	strict := Policy{}
	forms := map[string]func(v4 netip.Addr) netip.Addr{
		"IPv4-compatible ::a.b.c.d": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"IPv4-mapped ::ffff:a.b.c.d": func(v4 netip.Addr) netip.Addr { return netip.AddrFrom16(v4.As16()) },
		"IPv4-translated ::ffff:0:a.b.c.d": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{8: 0xff, 9: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"NAT64 64:ff9b::/96": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"local NAT64 64:ff9b:1::/48 as a /48": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 6: b[0], 7: b[1], 9: b[2], 10: b[3]})
		},
		"local NAT64 64:ff9b:1::/48 as a /64": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 9: b[0], 10: b[1], 11: b[2], 12: b[3]})
		},
		"local NAT64 64:ff9b:1::/48 as a /96": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"6to4 2002::/16": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			return netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1})
		},
		"Teredo 2001::/32, the client": func(v4 netip.Addr) netip.Addr {
			b := v4.As4()
			// A public server (93.184.215.14), the client inverted.
			return netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 4: 93, 5: 184, 6: 215, 7: 14, 12: ^b[0], 13: ^b[1], 14: ^b[2], 15: ^b[3]})
		},
	}
	for name, form := range forms {
		for v4, why := range map[string]string{
			"127.0.0.1":       "loopback",
			"169.254.169.254": "link-local (cloud metadata)",
			"10.0.0.1":        "private",
			"100.100.100.200": "Alibaba Cloud metadata",
		} {
			ip := form(netip.MustParseAddr(v4))
			err := strict.Check(ip)
			var refused *RefusedAddressError
			if !errors.As(err, &refused) || refused.Why != why || refused.Addr.String() != v4 {
				t.Errorf("%s %s (%s): got %v, want %s refused: %s", name, ip, v4, err, v4, why)
			}
		}
		public := form(netip.MustParseAddr("93.184.215.14"))
		err := strict.Check(public)
		if strings.HasPrefix(name, "local NAT64") {
			// The site's own NAT64: private, whatever it carries.
			if err == nil || !strings.HasSuffix(err.Error(), ": private") {
				t.Errorf("%s %s: got %v, want refused as private", name, public, err)
			}
			err = Policy{AllowPrivate: true}.Check(public)
		}
		if err != nil {
			t.Errorf("%s %s carrying a public address: refused (%v)", name, public, err)
		}
	}
}

// Allowed lifts the loopback and private refusals for its networks only,
// for an IPv6 address carrying one of their addresses too, and never the
// refusals that always hold.
func TestAllowedNetworks(t *testing.T) {
	allowed, err := ParseNetworks([]string{"10.1.0.0/16", "127.0.0.1", " fd00:1::/64 ", ""})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Allowed: allowed, PrivateFlag: "--allowed-private-networks", LoopbackFlag: "--allowed-private-networks"}
	for ip, ok := range map[string]bool{
		"10.1.2.3": true, "64:ff9b::10.1.2.3": true, "fd00:1::5": true, "127.0.0.1": true,
		"10.2.0.1": false, "127.0.0.2": false, "fd00:2::5": false, "::1": false,
	} {
		err := p.Check(netip.MustParseAddr(ip))
		if ok && err != nil {
			t.Errorf("%s: refused (%v), want allowed by the list", ip, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "(--allowed-private-networks allows it)")) {
			t.Errorf("%s: got %v, want refused, naming the flag", ip, err)
		}
	}
	everything := Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for _, ip := range []string{"169.254.169.254", "fe80::1", "100.100.100.200", "fd00:ec2::254", "0.0.0.0", "224.0.0.1"} {
		if everything.Check(netip.MustParseAddr(ip)) == nil {
			t.Errorf("%s: allowed by a list of everything", ip)
		}
	}
	for _, bad := range []string{"10.1.2.3/16", "example.com", "10.0.0.0/33"} {
		if _, err := ParseNetworks([]string{bad}); err == nil {
			t.Errorf("ParseNetworks(%q): no error", bad)
		}
	}
}
