package notifier

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

const matrixToken = "syt_SECRET_access"

type matrixArgs struct {
	MsgType       string         `json:"msgtype"`
	Body          string         `json:"body"`
	Format        string         `json:"format"`
	FormattedBody string         `json:"formatted_body"`
	Mentions      map[string]any `json:"m.mentions"`
}

// matrixServer stands in for a homeserver's client-server API: PUT
// /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId} with a
// bearer token, a transaction ID seen before answered with the same event
// and no new message, errors as {"errcode", "error"}.
type matrixServer struct {
	*standIn
	mu       sync.Mutex
	status   int
	messages int
	txns     map[string]string
}

func newMatrixServer(t *testing.T) *matrixServer {
	s := &matrixServer{txns: map[string]string{}}
	s.standIn = newStandIn(t, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		s.mu.Lock()
		defer s.mu.Unlock()
		fail := func(code int, errcode string) {
			reply(w, code, map[string]any{"errcode": errcode, "error": "details " + matrixToken})
		}
		const prefix = "/_matrix/client/v3/rooms/"
		room, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, prefix), "/")
		txn, isSend := strings.CutPrefix(rest, "send/m.room.message/")
		switch {
		case r.Method != http.MethodPut || !strings.HasPrefix(r.URL.Path, prefix) || !isSend || txn == "" || strings.Contains(txn, "/"):
			fail(http.StatusNotFound, "M_UNRECOGNIZED")
			return nil
		case r.Header.Get("Authorization") == "":
			fail(http.StatusUnauthorized, "M_MISSING_TOKEN")
			return nil
		case r.Header.Get("Authorization") != "Bearer "+matrixToken:
			fail(http.StatusUnauthorized, "M_UNKNOWN_TOKEN")
			return nil
		case s.status == http.StatusTooManyRequests:
			reply(w, s.status, map[string]any{"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": 2000})
			return nil
		case room != "!ops:example.org":
			fail(http.StatusForbidden, "M_FORBIDDEN") // not joined
			return nil
		}
		var args matrixArgs
		if err := strictJSON(body, &args); err != nil || args.MsgType == "" || args.Body == "" {
			fail(http.StatusBadRequest, "M_BAD_JSON")
			return nil
		}
		if id, ok := s.txns[txn]; ok {
			reply(w, http.StatusOK, map[string]any{"event_id": id})
			return nil
		}
		s.messages++
		s.txns[txn] = "$event" + strings.Repeat("x", s.messages)
		reply(w, http.StatusOK, map[string]any{"event_id": s.txns[txn]})
		return args
	})
	return s
}

func matrixConfig(s *matrixServer) Config {
	return Config{Type: notificationv1.MatrixProvider, Address: s.URL, Channel: "!ops:example.org", Token: matrixToken}
}

// TestMatrixSendsOneMessagePerEvent: the message goes to the room with a
// transaction ID from the event, so a retry of a delivery the homeserver
// already took is not a second message; another event is.
func TestMatrixSendsOneMessagePerEvent(t *testing.T) {
	g := NewWithT(t)
	srv := newMatrixServer(t)
	n, err := New(matrixConfig(srv))
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent()
	e.Message = "<b>not bold</b> & co"
	g.Expect(n.Post(context.Background(), e)).To(Succeed())
	g.Expect(n.Post(context.Background(), e)).To(Succeed(), "the retry")
	next := testEvent()
	next.ID = "another"
	g.Expect(n.Post(context.Background(), next)).To(Succeed())

	g.Expect(srv.seen).To(HaveLen(3))
	g.Expect(srv.messages).To(Equal(2))
	got := srv.accepted()[0]
	g.Expect(got).To(HaveKeyWithValue("msgtype", "m.notice"))
	g.Expect(got).To(HaveKeyWithValue("m.mentions", BeEmpty()), "an empty m.mentions: no one is notified by @room in an event's text")
	g.Expect(got).To(HaveKeyWithValue("format", "org.matrix.custom.html"))
	g.Expect(got["body"]).To(HavePrefix("🚨 kustomization/apps/web: DriftDetected\n<b>not bold</b> & co\nRevision: main@sha1:4f3c2b1a"))
	g.Expect(got["formatted_body"]).To(HavePrefix("<b>🚨 kustomization/apps/web: DriftDetected</b><br>&lt;b&gt;not bold&lt;/b&gt; &amp; co<br><b>Revision: </b>main@sha1:4f3c2b1a"))
}

// TestMatrixErrors: the spec's error codes are named; auth and room
// errors are permanent, M_LIMIT_EXCEEDED (429) retried; the token is
// never shown.
func TestMatrixErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutate    func(*Config)
		status    int
		permanent bool
		want      string
	}{
		{name: "not joined", mutate: func(c *Config) { c.Channel = "!other:example.org" }, permanent: true, want: `the matrix endpoint answered 403 Forbidden, error "M_FORBIDDEN"`},
		{name: "bad token", mutate: func(c *Config) { c.Token = "syt_wrong" }, permanent: true, want: `the matrix endpoint answered 401 Unauthorized, error "M_UNKNOWN_TOKEN"`},
		{name: "rate limited", status: http.StatusTooManyRequests, want: `the matrix endpoint answered 429 Too Many Requests, error "M_LIMIT_EXCEEDED"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newMatrixServer(t)
			srv.status = tc.status
			cfg := matrixConfig(srv)
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			expectPostFails(t, cfg, tc.want, tc.permanent)
		})
	}

	t.Run("an alias is no room ID", func(t *testing.T) {
		_, err := New(Config{Type: notificationv1.MatrixProvider, Address: "https://matrix.example.org", Channel: "#ops:example.org", Token: matrixToken})
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("the room ID")))
	})
}
