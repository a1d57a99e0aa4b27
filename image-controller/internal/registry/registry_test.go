package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"plumb.dev/pkg/netguard"
)

// Every connection is judged by the address policy at dial time: a
// registry on loopback is refused unless its network is allowed, and the
// message names the flag that allows it.
func TestConnectionsFollowTheAddressPolicy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/app/tags/list" {
			_, _ = w.Write([]byte(`{"name":"app","tags":["v1"]}`))
		}
	}))
	defer srv.Close()
	image := strings.TrimPrefix(srv.URL, "http://") + "/app"
	flag := "--allowed-private-networks"

	c, err := NewClient(image, Options{Addresses: netguard.Policy{LoopbackFlag: flag, PrivateFlag: flag}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tags(context.Background()); err == nil || !strings.Contains(err.Error(), "address 127.0.0.1 refused: loopback ("+flag+" allows it)") {
		t.Errorf("loopback without the flag: %v", err)
	}

	allowed := netguard.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, LoopbackFlag: flag, PrivateFlag: flag}
	c, err = NewClient(image, Options{Addresses: allowed})
	if err != nil {
		t.Fatal(err)
	}
	if tags, err := c.Tags(context.Background()); err != nil || len(tags) != 1 || tags[0] != "v1" {
		t.Errorf("loopback allowed: %v, %v", tags, err)
	}
}
