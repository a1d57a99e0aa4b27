package oci

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"plumb.dev/pkg/netguard"
)

// The proxy of spec.proxySecretRef is dialled under the address policy
// like the registry would be: a proxy on a refused address is never
// connected to, and the error names the policy.
func TestAProxyOnARefusedAddressIsNeverDialled(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	onlyFirst := netguard.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	proxy := &url.URL{Scheme: "http", Host: l.Addr().String()}
	c, err := NewClient(context.Background(), "oci://registry.example/org/app", Options{Proxy: proxy, Addresses: onlyFirst})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Resolve(Ref{Tag: "v1"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.2") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("want the proxy's address refused, got %v", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the refused proxy got %d connections", n)
	}
}
