package live

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"plumb.dev/pkg/app"
	"plumb.dev/ui/internal/access"
)

func TestTheStreamAnnouncesItsRetryBeatsWhileIdleAndSendsNoUncheckableChange(t *testing.T) {
	g := NewWithT(t)
	// A session that never reaches an API server: no change is sent, so
	// none is reviewed.
	s, err := access.NewSession(&rest.Config{Host: "http://127.0.0.1:1"}, app.NewScheme(), meta.NewDefaultRESTMapper(nil), access.ModeToken, "alice", nil)
	g.Expect(err).NotTo(HaveOccurred())
	h := &Handler{Hub: NewHub(), Heartbeat: 20 * time.Millisecond}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(access.WithSession(r.Context(), s)))
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	lines := bufio.NewScanner(resp.Body)
	read := func(n int) []string {
		var got []string
		for len(got) < n && lines.Scan() {
			got = append(got, lines.Text())
		}
		return got
	}
	g.Expect(read(3)).To(Equal([]string{"retry: 1000", ": connected", ""}))
	// Subscribed: a change of a kind whose access cannot be checked is
	// not sent; the next lines are a heartbeat.
	h.Hub.Publish(Change{Kind: "Secret", Namespace: "apps", Name: "token", Reason: Updated})
	g.Expect(read(2)).To(Equal([]string{": heartbeat", ""}))
}

func TestAStreamWithoutASessionIsRefused(t *testing.T) {
	g := NewWithT(t)
	w := httptest.NewRecorder()
	(&Handler{Hub: NewHub()}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/live", nil))
	g.Expect(w.Code).To(Equal(http.StatusUnauthorized))
}

func TestASessionsFifthStreamIsRefusedUntilOneCloses(t *testing.T) {
	g := NewWithT(t)
	newSession := func(user string) *access.Session {
		s, err := access.NewSession(&rest.Config{Host: "http://127.0.0.1:1"}, app.NewScheme(), meta.NewDefaultRESTMapper(nil), access.ModeToken, user, nil)
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	alice, bob := newSession("alice"), newSession("bob")
	h := &Handler{Hub: NewHub()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := alice
		if r.URL.Query().Get("as") == "bob" {
			s = bob
		}
		h.ServeHTTP(w, r.WithContext(access.WithSession(r.Context(), s)))
	}))
	defer srv.Close()
	open := func(as string) *http.Response {
		resp, err := http.Get(srv.URL + "/?as=" + as)
		g.Expect(err).NotTo(HaveOccurred())
		return resp
	}
	var streams []*http.Response
	for range MaxStreamsPerSession {
		resp := open("alice")
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		streams = append(streams, resp)
	}
	defer func() {
		for _, resp := range streams {
			resp.Body.Close()
		}
	}()
	resp := open("alice")
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
	resp = open("bob")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "another session's stream")
	resp.Body.Close()

	streams[0].Body.Close() // the tab closes: the server sees the disconnect
	g.Eventually(func() int {
		resp := open("alice")
		if resp.StatusCode == http.StatusOK {
			streams = append(streams, resp)
		} else {
			resp.Body.Close()
		}
		return resp.StatusCode
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
}
