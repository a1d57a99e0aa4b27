package notifier

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

func TestAddressPolicy(t *testing.T) {
	strict := AddressPolicy{}
	private := AddressPolicy{AllowPrivate: true}
	local := AddressPolicy{AllowPrivate: true, AllowLoopback: true}
	for _, tc := range []struct {
		ip                     string
		strict, private, local bool // allowed under each policy
	}{
		{"93.184.215.14", true, true, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true, true, true},
		{"169.254.169.254", false, false, false},
		{"169.254.0.1", false, false, false},
		{"fe80::1", false, false, false},
		{"::ffff:169.254.169.254", false, false, false},
		{"64:ff9b::a9fe:a9fe", false, false, false}, // NAT64 of 169.254.169.254
		{"fd00:ec2::254", false, false, false},
		{"100.100.100.200", false, false, false},
		{"168.63.129.16", false, false, false},
		{"0.0.0.0", false, false, false},
		{"0.1.2.3", false, false, false},
		{"::", false, false, false},
		{"224.0.0.1", false, false, false},
		{"ff02::1", false, false, false},
		{"255.255.255.255", false, false, false},
		{"127.0.0.1", false, false, true},
		{"127.1.2.3", false, false, true},
		{"::1", false, false, true},
		{"::ffff:127.0.0.1", false, false, true},
		{"10.96.0.10", false, true, true},
		{"172.16.0.1", false, true, true},
		{"192.168.1.1", false, true, true},
		{"100.64.0.1", false, true, true},
		{"fd12:3456::1", false, true, true},
	} {
		ip := netip.MustParseAddr(tc.ip)
		for _, p := range []struct {
			name    string
			policy  AddressPolicy
			allowed bool
		}{{"strict", strict, tc.strict}, {"private", private, tc.private}, {"local", local, tc.local}} {
			err := p.policy.Check(ip)
			if (err == nil) != p.allowed {
				t.Errorf("%s under %s: allowed=%v, want %v (%v)", tc.ip, p.name, err == nil, p.allowed, err)
			}
		}
	}
}

// A delivery through NewHTTPClient is refused at dial time when the name
// resolves to a refused address ("localhost" here), and the error is
// permanent: retrying would not change the answer.
func TestDialRefusesResolvedAddress(t *testing.T) {
	g := NewWithT(t)
	hit := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	n, err := New(Config{Type: notificationv1.GenericProvider, Address: "http://localhost:" + port + "/hook",
		Client: NewHTTPClient(AddressPolicy{AllowPrivate: true}, 5*time.Second)})
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), testEvent())
	var refused *RefusedAddressError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	g.Expect(refused.Addr.IsLoopback()).To(BeTrue())
	g.Expect(IsPermanent(err)).To(BeTrue())
	g.Expect(hit).To(BeEmpty(), "the endpoint got nothing")

	// Loopback allowed: the same delivery goes through.
	n, _ = New(Config{Type: notificationv1.GenericProvider, Address: "http://localhost:" + port + "/hook",
		Client: NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second)})
	g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())
	g.Expect(hit).To(HaveLen(1))
}

// A redirect is not followed: the payload goes nowhere but the configured
// address, and the 3xx is a failed delivery.
func TestRedirectsAreNotFollowed(t *testing.T) {
	g := NewWithT(t)
	elsewhere := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere <- struct{}{} }))
	defer target.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.RedirectHandler(target.URL+"/stolen", code))
		n, _ := New(Config{Type: notificationv1.SlackProvider, Address: srv.URL,
			Client: NewHTTPClient(AddressPolicy{AllowLoopback: true}, 5*time.Second)})
		err := n.Post(context.Background(), testEvent())
		srv.Close()
		g.Expect(err).To(MatchError(ContainSubstring("answered %d", code)))
		g.Expect(IsPermanent(err)).To(BeTrue())
	}
	g.Expect(elsewhere).To(BeEmpty())
}

// A URL with credentials in an event's text reaches the provider without
// them.
func TestUserInfoIsStripped(t *testing.T) {
	g := NewWithT(t)
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<16)
		n, _ := r.Body.Read(buf)
		got = buf[:n]
	}))
	defer srv.Close()
	e := testEvent()
	e.Message = "fetch https://bot:ghp_SECRET@git.example.com/org/repo.git failed"
	e.Metadata = map[string]string{"url": "https://u:SECRET2@example.com/x"}
	e.Changes[0].After = `"nats://user:SECRET3@nats:4222"`
	for _, typ := range []string{notificationv1.SlackProvider, notificationv1.GenericProvider} {
		n, _ := New(Config{Type: typ, Address: srv.URL})
		g.Expect(n.Post(context.Background(), e)).To(Succeed())
		g.Expect(string(got)).To(ContainSubstring("git.example.com/org/repo.git"))
		g.Expect(string(got)).NotTo(ContainSubstring("SECRET"))
	}
	g.Expect(e.Message).To(ContainSubstring("ghp_SECRET"), "the caller's event is not modified")
}
