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
