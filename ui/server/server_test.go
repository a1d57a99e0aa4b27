package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/server"
)

func TestATokenSignsInAsItsServiceAccountUntilSignOut(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "signin")
	token, user := serviceAccountToken(t, ns, "viewer")
	srv := start(t, server.AuthToken, false)
	b := newBrowser(t, srv)

	status, data, header := b.do(http.MethodPost, "/api/login", map[string]string{"token": token})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var signedIn session
	g.Expect(json.Unmarshal(data, &signedIn)).To(Succeed())
	g.Expect(signedIn.User).To(Equal(user), "the user is who the API server says the token is")
	g.Expect(signedIn.Groups).To(ContainElement("system:serviceaccounts:" + ns))
	cookie := header.Get("Set-Cookie")
	g.Expect(cookie).To(HavePrefix("__Host-plumb_session="), "Secure: the prefix keeps sibling hosts and plain HTTP from setting it")
	g.Expect(cookie).To(ContainSubstring("Path=/"))
	g.Expect(cookie).NotTo(ContainSubstring("Domain="))
	g.Expect(cookie).To(ContainSubstring("HttpOnly"))
	g.Expect(cookie).To(ContainSubstring("SameSite=Strict"))
	g.Expect(cookie).To(ContainSubstring("Secure"), "without --insecure-cookies")
	g.Expect(cookie).NotTo(ContainSubstring(token), "the browser holds a session id, never the token")

	// The jar keeps Secure cookies off plain HTTP, as a browser does, so
	// the rest of the test runs against a server with --insecure-cookies.
	srv = start(t, server.AuthToken, true)
	b = newBrowser(t, srv)
	s := b.signIn(map[string]string{"token": token})
	g.Expect(s).To(MatchFields(user, "token"))
	g.Expect(s.CSRF).NotTo(BeEmpty())

	status, data, header = b.do(http.MethodPost, "/api/logout", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(header.Get("Set-Cookie")).To(HavePrefix("plumb_session=;"), "--insecure-cookies: no prefix, which a browser refuses without Secure")
	status, data, _ = b.do(http.MethodGet, "/api/session", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized), string(data))
}

// An open live stream ends with its session: when the user signs out
// (from another request), and when the session expires while the stream
// sits idle.
func TestALiveStreamEndsWithItsSession(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "live-end")
	token, _ := serviceAccountToken(t, ns, "viewer")

	b := newBrowser(t, start(t, server.AuthToken, true))
	b.signIn(map[string]string{"token": token})
	stream := b.live()
	g.Consistently(stream.changes, 300*time.Millisecond).ShouldNot(BeClosed(), "the stream stays open while the session lasts")
	status, data, _ := b.do(http.MethodPost, "/api/logout", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Eventually(stream.changes, 30*time.Second).Should(BeClosed(), "signing out ends the stream")

	short := newBrowser(t, startWith(t, server.Options{Auth: server.AuthToken, InsecureCookies: true, SessionTTL: 2 * time.Second}))
	short.signIn(map[string]string{"token": token})
	stream = short.live()
	g.Eventually(stream.changes, 30*time.Second).Should(BeClosed(), "an expired session ends the stream")
}

// A script trying tokens behind a shared address spends that address's
// sign-ins, and the users who come through the same address are not
// locked out by it: a browser that signed in here before has a device
// cookie and sign-ins of its own. A stranger without one, or with a cookie
// the server did not make, still meets the address's limit.
func TestAScriptOnASharedAddressDoesNotLockOutKnownBrowsers(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "lockout")
	token, _ := serviceAccountToken(t, ns, "viewer")
	srv := start(t, server.AuthToken, true)

	known := newBrowser(t, srv)
	known.signIn(map[string]string{"token": token})
	status, data, _ := known.do(http.MethodPost, "/api/logout", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))

	script := newBrowser(t, srv)
	limited := false
	for range 40 {
		status, _, _ := script.do(http.MethodPost, "/api/login", map[string]string{"token": "not-a-token"})
		if status == http.StatusTooManyRequests {
			limited = true
			break
		}
		g.Expect(status).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(limited).To(BeTrue(), "the script spent the address's sign-ins")

	stranger := newBrowser(t, srv)
	status, data, _ = stranger.do(http.MethodPost, "/api/login", map[string]string{"token": token})
	g.Expect(status).To(Equal(http.StatusTooManyRequests), "a browser that never signed in here shares the address's limit: %s", data)
	forged := newBrowser(t, srv)
	u, err := url.Parse(forged.base)
	g.Expect(err).NotTo(HaveOccurred())
	forged.http.Jar.SetCookies(u, []*http.Cookie{{Name: "plumb_device", Value: "bm90LW91cnM.bm90LWEtbWFj", Path: "/"}})
	status, data, _ = forged.do(http.MethodPost, "/api/login", map[string]string{"token": token})
	g.Expect(status).To(Equal(http.StatusTooManyRequests), "a device cookie the server did not make counts for nothing: %s", data)

	s := known.signIn(map[string]string{"token": token})
	g.Expect(s.CSRF).NotTo(BeEmpty(), "the browser that signed in before is not locked out")
}

func TestAUsersEleventhSignInEndsTheirOldestSession(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "sessions")
	token, _ := serviceAccountToken(t, ns, "viewer")
	srv := start(t, server.AuthToken, true)
	var tabs []*browser
	for range access.MaxSessionsPerUser + 1 {
		b := newBrowser(t, srv)
		b.signIn(map[string]string{"token": token})
		tabs = append(tabs, b)
	}
	status, data, _ := tabs[0].do(http.MethodGet, "/api/session", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized), "the oldest session ended: %s", data)
	for _, b := range tabs[1:] {
		status, data, _ := b.do(http.MethodGet, "/api/session", nil)
		g.Expect(status).To(Equal(http.StatusOK), string(data))
	}

	// Sign-ins from one address are rate-limited: a script trying tokens
	// meets 429 before long (each try is a review on the API server).
	b := newBrowser(t, srv)
	limited := false
	for range 40 {
		status, _, header := b.do(http.MethodPost, "/api/login", map[string]string{"token": "not-a-token"})
		if status == http.StatusTooManyRequests {
			g.Expect(header.Get("Retry-After")).NotTo(BeEmpty())
			limited = true
			break
		}
		g.Expect(status).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(limited).To(BeTrue(), "40 sign-ins in a row from one address")
}

func TestInKubeconfigModeTheCookieAloneReadsNothing(t *testing.T) {
	g := NewWithT(t)
	srv := start(t, server.AuthKubeconfig, false)
	b := newBrowser(t, srv)
	s := b.signIn(map[string]string{"secret": srv.LoginSecret()})
	// Another server on 127.0.0.1 the browser visits receives the cookie
	// (cookies ignore ports) and replays it with the right Host.
	b.csrf = ""
	for _, path := range []string{"/api/session", "/api/overview", "/api/namespaces", "/api/live", "/api/events", "/api/drift"} {
		status, data, _ := b.do(http.MethodGet, path, nil)
		g.Expect(status).To(Equal(http.StatusForbidden), path)
		g.Expect(errorOf(t, data)).To(ContainSubstring("X-Plumb-CSRF"), path)
	}
	b.csrf = s.CSRF
	status, data, _ := b.do(http.MethodGet, "/api/overview", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	b.live().close() // EventSource's ?csrf=
}

// MatchFields matches a session's user and mode.
func MatchFields(user, mode string) OmegaMatcher {
	return And(WithTransform(func(s session) string { return s.User }, Equal(user)),
		WithTransform(func(s session) string { return s.Mode }, Equal(mode)))
}

func TestABadTokenAndARequestWithoutASessionAreRefused(t *testing.T) {
	g := NewWithT(t)
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)

	status, data, _ := b.do(http.MethodPost, "/api/login", map[string]string{"token": "not-a-token"})
	g.Expect(status).To(Equal(http.StatusUnauthorized), string(data))
	g.Expect(errorOf(t, data)).To(ContainSubstring("does not accept this token"))

	for _, path := range []string{"/api/session", "/api/overview", "/api/namespaces", "/api/live", "/api/objects/kustomization/default/x"} {
		status, data, _ := b.do(http.MethodGet, path, nil)
		g.Expect(status).To(Equal(http.StatusUnauthorized), path)
		g.Expect(errorOf(t, data)).To(Equal("sign in first"), path)
	}
	status, _, _ = b.do(http.MethodPost, "/api/objects/kustomization/default/x/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusUnauthorized))

	// A form another site could post is not JSON.
	resp, err := http.PostForm(b.base+"/api/login", url.Values{"token": {"x"}})
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnsupportedMediaType))
}

func TestAWriteWithoutTheSessionsCSRFHeaderIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "csrf")
	token, _ := serviceAccountToken(t, ns, "operator")
	grant(t, ns, ns, "operator", "get", "list", "watch", "patch")
	ks := kustomization(ns, "app", "app")
	create(t, ks)
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	s := b.signIn(map[string]string{"token": token})

	for _, csrf := range []string{"", "wrong"} {
		b.csrf = csrf
		status, data, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/app/suspend", map[string]any{})
		g.Expect(status).To(Equal(http.StatusForbidden), string(data))
		g.Expect(errorOf(t, data)).To(ContainSubstring("X-Plumb-CSRF"))
	}
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Spec.Suspend).To(BeFalse(), "a refused write changes nothing")

	b.csrf = s.CSRF
	// The RoleBinding reaches the authorizer through a watch.
	g.Eventually(func() int {
		status, _, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/app/suspend", map[string]any{})
		return status
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))
}

func TestKubeconfigModeWantsTheOneTimeSecretAndALoopbackHost(t *testing.T) {
	g := NewWithT(t)
	srv := start(t, server.AuthKubeconfig, false)
	secret := srv.LoginSecret()
	g.Expect(secret).NotTo(BeEmpty())
	g.Expect(srv.LoginURL()).To(Equal(srv.URL() + "#/?login=" + secret))
	g.Expect(srv.URL()).To(HavePrefix("http://127.0.0.1:"))

	b := newBrowser(t, srv)
	port := srv.Addr()[strings.LastIndex(srv.Addr(), ":"):]
	b.host = "rebound.example.com" + port
	status, data, _ := b.do(http.MethodPost, "/api/login", map[string]string{"secret": secret})
	g.Expect(status).To(Equal(http.StatusMisdirectedRequest), "a name other than 127.0.0.1 or localhost: DNS rebinding")
	g.Expect(errorOf(t, data)).To(ContainSubstring("127.0.0.1"))
	b.host = "localhost:1" + port[1:] // the right name at another port
	status, _, _ = b.do(http.MethodGet, "/", nil)
	g.Expect(status).To(Equal(http.StatusMisdirectedRequest))

	b.host = "localhost" + port
	status, data, _ = b.do(http.MethodPost, "/api/login", map[string]string{"secret": "guess"})
	g.Expect(status).To(Equal(http.StatusUnauthorized), string(data))
	s := b.signIn(map[string]string{"secret": secret})
	g.Expect(s.Mode).To(Equal(server.AuthKubeconfig))
	g.Expect(s.User).NotTo(BeEmpty(), "the kubeconfig's user, as the API server names it")

	other := newBrowser(t, srv)
	status, _, _ = other.do(http.MethodPost, "/api/login", map[string]string{"secret": secret})
	g.Expect(status).To(Equal(http.StatusUnauthorized), "the secret was used")
	g.Expect(srv.LoginSecret()).NotTo(Equal(secret), "a new one replaces it")
	other.signIn(map[string]string{"secret": srv.LoginSecret()})

	_, err := server.New(context.Background(), server.Options{Listen: "0.0.0.0:0", Auth: server.AuthKubeconfig, Config: env.Config})
	g.Expect(err).To(MatchError(ContainSubstring("listen on 127.0.0.1")), "the kubeconfig's user is not served to the network")
}

func TestAServerWithoutASocketIsServedByItsCaller(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.New(ctx, server.Options{Auth: server.AuthKubeconfig, Config: env.Config})
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	g.Expect(srv.Addr()).To(BeEmpty())
	g.Expect(srv.LoginURL()).To(Equal("/#/?login=" + srv.LoginSecret()))
	g.Expect(srv.Run(ctx)).To(MatchError(ContainSubstring("no address")))

	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	b := &browser{t: t, base: ts.URL, http: ts.Client()}
	b.host = "rebound.example.com:80"
	status, _, _ := b.do(http.MethodGet, "/api/session", nil)
	g.Expect(status).To(Equal(http.StatusMisdirectedRequest), "the name is checked even where the port is not known")
	b.host = ""
	status, _, _ = b.do(http.MethodGet, "/api/session", nil)
	g.Expect(status).To(Equal(http.StatusUnauthorized), "127.0.0.1 at the caller's port passes")
}

// overviewPage is GET /api/overview's answer, as much as the tests read.
type overviewPage struct {
	Total  int            `json:"total"`
	Counts map[string]int `json:"counts"`
	Items  []struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Suspended bool   `json:"suspended"`
		Ready     string `json:"ready"`
	} `json:"items"`
}

func TestAUserSeesAndChangesOnlyTheNamespaceTheirRBACAllows(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mine, theirs := namespace(t, "mine"), namespace(t, "theirs")
	token, _ := serviceAccountToken(t, mine, "dev")
	grant(t, mine, mine, "dev", "get", "list", "watch", "patch")
	create(t, gitRepository(mine, "app"), kustomization(mine, "app", "app"), gitRepository(theirs, "app"), kustomization(theirs, "app", "app"))
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": token})

	var page overviewPage
	g.Eventually(func(g Gomega) {
		status, data, _ := b.do(http.MethodGet, "/api/overview?limit=500", nil)
		g.Expect(status).To(Equal(http.StatusOK), string(data))
		g.Expect(json.Unmarshal(data, &page)).To(Succeed())
		g.Expect(page.Total).To(Equal(2))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	for _, r := range page.Items {
		g.Expect(r.Namespace).To(Equal(mine), "%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	g.Expect(page.Items[0].Kind).To(Equal(sourcev1.GitRepositoryKind), "sorted by kind")
	g.Expect(page.Counts["Progressing"]).To(Equal(2), "neither was reconciled")

	status, data, _ := b.do(http.MethodGet, "/api/overview?namespace="+theirs, nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.Total).To(BeZero(), "asking for the namespace by name shows nothing either")
	status, data, _ = b.do(http.MethodGet, "/api/namespaces", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(string(data)).To(MatchJSON(`{"namespaces": ["` + mine + `"]}`))
	status, _, _ = b.do(http.MethodGet, "/api/overview?limit=x", nil)
	g.Expect(status).To(Equal(http.StatusBadRequest))

	// Actions elsewhere: the API server's 403, passed through.
	for _, action := range []string{"suspend", "resume", "reconcile"} {
		status, data, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+theirs+"/app/"+action, map[string]any{})
		g.Expect(status).To(Equal(http.StatusForbidden), action)
		g.Expect(errorOf(t, data)).To(ContainSubstring("cannot get resource \"kustomizations\""), action)
	}

	// Actions here take effect, made as the user.
	key := client.ObjectKey{Namespace: mine, Name: "app"}
	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeTrue())

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/resume", map[string]any{})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeFalse())
	resumed := ks.Annotations[meta.ReconcileRequestAnnotation]
	g.Expect(resumed).NotTo(BeEmpty(), "resuming requests a reconcile")

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/reconcile", map[string]any{"withSource": true})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var result struct {
		Requested string `json:"requested"`
	}
	g.Expect(json.Unmarshal(data, &result)).To(Succeed())
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.Annotations[meta.ReconcileRequestAnnotation]).To(Equal(result.Requested))
	g.Expect(result.Requested).NotTo(Equal(resumed))
	src := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, key, src)).To(Succeed())
	g.Expect(src.Annotations[meta.ReconcileRequestAnnotation]).NotTo(BeEmpty(), "withSource: the GitRepository too")

	status, _, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/gone/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusNotFound))
	status, _, _ = b.do(http.MethodPost, "/api/objects/alert/"+mine+"/app/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusNotFound))
}

func TestLiveSendsChangesOfObjectsTheUserMayGetOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mine, theirs := namespace(t, "live-mine"), namespace(t, "live-theirs")
	token, _ := serviceAccountToken(t, mine, "watcher")
	grant(t, mine, mine, "watcher", "get", "list", "watch")
	allowed, forbidden := kustomization(mine, "app", "app"), kustomization(theirs, "app", "app")
	create(t, allowed, forbidden)
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": token})
	// The grant reaches the authorizer through a watch; wait until it has.
	g.Eventually(func() int {
		_, data, _ := b.do(http.MethodGet, "/api/overview", nil)
		var p overviewPage
		_ = json.Unmarshal(data, &p)
		return p.Total
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(1))
	stream := b.live()

	annotate := func(obj client.Object, value string) {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"test":"`+value+`"}}}`))
		g.Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
	}
	// The forbidden object changes first: the hub keeps the order, so
	// had it been sent it would arrive before the allowed one.
	annotate(forbidden, "1")
	annotate(allowed, "1")
	var seen []map[string]string
	g.Eventually(func() []map[string]string {
		for {
			select {
			case c, ok := <-stream.changes:
				if !ok {
					return seen
				}
				seen = append(seen, c)
			default:
				return seen
			}
		}
	}, 10*time.Second, 50*time.Millisecond).Should(ContainElement(map[string]string{
		"kind": kustomizev1.KustomizationKind, "namespace": mine, "name": "app", "reason": "Updated"}))
	for _, c := range seen {
		g.Expect(c["namespace"]).To(Equal(mine), "no change of %s reaches a user who may not get it", theirs)
	}

	// The watcher may read but not patch: the write is made as the user,
	// not with the UI's own rights.
	b.csrf = b.signIn(map[string]string{"token": token}).CSRF
	status, data, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))
	g.Expect(errorOf(t, data)).To(ContainSubstring(`cannot patch resource "kustomizations"`))
}
