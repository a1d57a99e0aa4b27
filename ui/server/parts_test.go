package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/live"
	"plumb.dev/ui/server"
)

// changes is a ChangeSource a test feeds.
type changes chan live.Change

func (c changes) Changes() (<-chan live.Change, func()) { return c, func() {} }

func TestAPartsRoutesAreServedWithTheSessionAndItsChangesReachTheLiveStream(t *testing.T) {
	g := NewWithT(t)
	ns, other := namespace(t, "part"), namespace(t, "part-other")
	token, user := serviceAccountToken(t, ns, "reader")
	grant(t, ns, ns, "reader", "get", "list", "watch")
	fed := make(changes, 10)
	closed := make(chan struct{})
	part := func(env server.Env) (server.Part, error) {
		return server.Part{
			Routes: func(mux *http.ServeMux, a access.Access) {
				mux.HandleFunc("GET /api/whoami", func(w http.ResponseWriter, r *http.Request) {
					s := a.From(r)
					httpapi.JSON(w, http.StatusOK, map[string]any{"user": s.User(),
						"mayList": s.MayDo(r.Context(), "list", kustomizev1.GroupVersion.Group, "kustomizations", ns, "")})
				})
			},
			Changes: fed,
			Root: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("the web app"))
			}),
			Close: func() { close(closed) },
		}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, server.Options{Listen: "127.0.0.1:0", Config: env.Config, InsecureCookies: true, Parts: []server.PartBuilder{part}})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	b := newBrowser(t, srv)
	status, body, _ := b.do(http.MethodGet, "/", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(string(body)).To(Equal("the web app"), "the root needs no session: the sign-in page is part of it")
	status, _, _ = b.do(http.MethodGet, "/healthz", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	status, _, _ = b.do(http.MethodGet, "/api/whoami", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized), "a part's routes are behind the session check")

	b.signIn(map[string]string{"token": token})
	status, body, header := b.do(http.MethodGet, "/api/whoami", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(string(body)).To(MatchJSON(`{"user": "` + user + `", "mayList": true}`))
	g.Expect(header.Get("Content-Security-Policy")).To(ContainSubstring("default-src 'self'"))
	status, body, _ = b.do(http.MethodGet, "/api/nothing-here", nil)
	g.Expect(status).To(Equal(http.StatusNotFound))
	g.Expect(errorOf(t, body)).To(ContainSubstring("no route"))

	stream := b.live()
	fed <- live.Change{Kind: kustomizev1.KustomizationKind, Namespace: other, Name: "app", Reason: "DriftDetected"}
	fed <- live.Change{Kind: kustomizev1.KustomizationKind, Namespace: ns, Name: "app", Reason: "DriftDetected"}
	select {
	case first := <-stream.changes:
		g.Expect(first).To(Equal(map[string]string{"kind": kustomizev1.KustomizationKind, "namespace": ns, "name": "app", "reason": "DriftDetected"}),
			"the first change the page gets is the allowed one: the other was held back")
	case <-time.After(10 * time.Second):
		t.Fatal("no change reached the page")
	}

	stream.close()
	cancel()
	g.Expect(<-done).To(Succeed())
	g.Expect(closed).To(BeClosed(), "Run closes the parts")
}
