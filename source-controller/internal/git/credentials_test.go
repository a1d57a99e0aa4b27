package git

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

// TestErrorsNeverShowTheUserInfoOfTheURL: whatever fails, the message (and
// so the status, events, alerts and log lines made of it) names the URL
// without user:password@, also where go-git or net/http quote it.
func TestErrorsNeverShowTheUserInfoOfTheURL(t *testing.T) {
	f := newFixture(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer failing.Close()
	const user, password = "tok-user-7f3a", "tok-secret-91c2"
	for name, rawURL := range map[string]string{
		"refused credentials": f.repo.URL(),
		"server error":        failing.URL + "/app.git",
		"unreachable host":    "http://" + closedPort(t) + "/app.git",
		"missing repository":  f.srv.HTTPAddress() + "/nothing.git",
		"invalid URL":         "http://" + closedPort(t) + ":x/app.git",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			withCreds := strings.Replace(rawURL, "http://", "http://"+user+":"+password+"@", 1)
			_, _, err := fetch(t, withCreds, nil, nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(Or(ContainSubstring(user), ContainSubstring(password)))
			g.Expect(err.Error()).To(ContainSubstring(strings.TrimPrefix(rawURL, "http://")[:8]), "the URL is still named")
		})
	}
}

// TestAnHTTPSRemoteRedirectingToHTTPIsRefusedBeforeCredentialsLeave: the
// repository was asked for over https://, so no request, and no
// credential, may follow a redirect to plain http://.
func TestAnHTTPSRemoteRedirectingToHTTPIsRefusedBeforeCredentialsLeave(t *testing.T) {
	g := NewWithT(t)
	var plain atomic.Int32
	clear := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
	}))
	defer clear.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, clear.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer tlsSrv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})

	for name, secret := range map[string]map[string][]byte{
		"basic auth":   {UsernameKey: []byte("git"), PasswordKey: []byte("pw"), CAKey: ca},
		"bearer token": {BearerTokenKey: []byte("t0ken"), CAKey: ca},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := fetch(t, tlsSrv.URL+"/app.git", secret, nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(KindOf(err)).To(Equal(Insecure), err.Error())
			g.Expect(err.Error()).To(ContainSubstring("redirected https:// to plain http://"))
		})
	}
	g.Expect(plain.Load()).To(BeZero(), "a request reached the plain-HTTP server")
}
