package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"plumb.dev/pkg/netguard"
)

// The policy of a program with --allowed-private-networks.
func policy(allowed ...netip.Prefix) netguard.Policy {
	return netguard.Policy{Allowed: allowed, LoopbackFlag: "--allowed-private-networks", PrivateFlag: "--allowed-private-networks"}
}

// An error answer's body is its excerpt; a success's is untouched.
func TestExcerptsCutErrorAnswersOnly(t *testing.T) {
	body := strings.Repeat("\x1b[31mno\x1b[0m\r\n", 100_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	loopback := policy(netip.MustParsePrefix("127.0.0.0/8"))
	c := &http.Client{Transport: Excerpts(Transport(loopback))}
	get := func(path string) (string, int64) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), resp.ContentLength
	}
	if got, _ := get("/ok"); got != body {
		t.Errorf("a success's body was changed: %d bytes of %d", len(got), len(body))
	}
	got, n := get("/fail")
	if !strings.HasPrefix(got, "no no no") || len(got) > 256 || int64(len(got)) != n {
		t.Errorf("an error answer's body: %q (Content-Length %d)", got, n)
	}
	if _, err := (&http.Client{Transport: Transport(policy())}).Get(srv.URL); err == nil ||
		!strings.Contains(err.Error(), "address 127.0.0.1 refused: loopback (--allowed-private-networks allows it)") {
		t.Errorf("loopback without --allowed-private-networks: %v", err)
	}
}
