package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/ui/server"
)

// start runs a server in the given mode on a free loopback port until the
// test ends.
func start(t *testing.T, auth string, insecureCookies bool) *server.Server {
	t.Helper()
	return startWith(t, server.Options{Auth: auth, InsecureCookies: insecureCookies})
}

// startWith runs a server with opts (its address and config set here)
// until the test ends.
func startWith(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts.Listen, opts.Config = "127.0.0.1:0", env.Config
	srv, err := server.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return srv
}

// namespace makes a fresh namespace for one test.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := env.Namespace(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// serviceAccountToken creates a ServiceAccount in ns and returns a real
// token of it (TokenRequest) and its user name.
func serviceAccountToken(t *testing.T, ns, name string) (string, string) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("TokenRequest for %s: %v", name, err)
	}
	return tr.Status.Token, "system:serviceaccount:" + ns + ":" + name
}

// grant lets the ServiceAccount ns/name do verbs on Plumb's
// Kustomizations and GitRepositories in namespace where.
func grant(t *testing.T, where, ns, name string, verbs ...string) {
	t.Helper()
	grantRules(t, where, ns, name, "ui-"+name, []rbacv1.PolicyRule{
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: verbs},
		{APIGroups: []string{sourcev1.GroupVersion.Group}, Resources: []string{"gitrepositories"}, Verbs: verbs},
	})
}

// grantRules binds a Role of rules in where to the ServiceAccount
// ns/name, and waits until the authorizer allows its first rule's first
// verb on its first resource.
func grantRules(t *testing.T, where, ns, name, role string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: where}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: where},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	for _, o := range []client.Object{r, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The authorizer learns of the binding through a watch: wait until it
	// has, so that no review the UI caches for a minute sees the old
	// rights.
	user := "system:serviceaccount:" + ns + ":" + name
	first := rules[0]
	deadline := time.Now().Add(30 * time.Second)
	for {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: first.Verbs[0], Group: first.APIGroups[0], Resource: first.Resources[0], Namespace: where},
		}}
		if err := env.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s may still not %s %s in %s", user, first.Verbs[0], first.Resources[0], where)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func gitRepository(ns, name string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://git.example.com/org/" + name + ".git", Interval: metav1.Duration{Duration: time.Hour}},
	}
}

func kustomization(ns, name, source string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source},
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
		},
	}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// browser is an HTTP client with a cookie jar, as a browser tab is.
type browser struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
	// host, when set, is sent as the Host header.
	host string
}

func newBrowser(t *testing.T, srv *server.Server) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: strings.TrimSuffix(srv.URL(), "/"), http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// do sends a request with a JSON body (nil for none) and the CSRF header
// the browser has, and returns the status and the body.
func (b *browser) do(method, path string, body any) (int, []byte, http.Header) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.csrf != "" {
		req.Header.Set("X-Plumb-CSRF", b.csrf)
	}
	if b.host != "" {
		req.Host = b.host
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, data, resp.Header
}

// session is GET /api/session's answer.
type session struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	Mode   string   `json:"mode"`
	CSRF   string   `json:"csrf"`
}

// signIn signs in with body and keeps the session's CSRF value, which the
// sign-in answers and every further request carries.
func (b *browser) signIn(body any) session {
	b.t.Helper()
	status, data, _ := b.do(http.MethodPost, "/api/login", body)
	if status != http.StatusOK {
		b.t.Fatalf("sign-in: %d %s", status, data)
	}
	var login session
	if err := json.Unmarshal(data, &login); err != nil {
		b.t.Fatal(err)
	}
	b.csrf = login.CSRF
	status, data, _ = b.do(http.MethodGet, "/api/session", nil)
	if status != http.StatusOK {
		b.t.Fatalf("session: %d %s", status, data)
	}
	var s session
	if err := json.Unmarshal(data, &s); err != nil {
		b.t.Fatal(err)
	}
	b.csrf = s.CSRF
	return s
}

// errorOf is the error message of a JSON error answer.
func errorOf(t *testing.T, data []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Error == "" {
		t.Fatalf("not a JSON error: %s", data)
	}
	return e.Error
}

// sse is an open GET /api/live.
type sse struct {
	changes chan map[string]string
	close   func()
}

// live opens GET /api/live and decodes its change events.
func (b *browser) live() *sse {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/api/live?csrf="+url.QueryEscape(b.csrf), nil)
	if err != nil {
		b.t.Fatal(err)
	}
	client := &http.Client{Jar: b.http.Jar} // no timeout: the stream stays open
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		b.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		b.t.Fatalf("live: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{changes: make(chan map[string]string, 1000), close: func() { cancel(); resp.Body.Close() }}
	go func() {
		defer close(s.changes)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "change":
				var c map[string]string
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c) == nil {
					s.changes <- c
				}
			case line == "":
				event = ""
			}
		}
	}()
	b.t.Cleanup(s.close)
	return s
}
