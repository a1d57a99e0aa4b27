package inspect_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/testenv"
)

// lazyEnv is started by the first test that needs the API server, so the
// fuzz targets' workers start none.
var lazyEnv = testenv.Lazy{Options: []testenv.Option{testenv.WithoutNATS()}}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	lazyEnv.Stop()
	os.Exit(code)
}

const manifests = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team-a}\ndata: {mode: fast}\n"

// renderedPath is where render-controller serves a render of
// Kustomization team-a/app: its digest's hex, .yaml.
var renderedPath = "/kustomization/team-a/app/" + strings.TrimPrefix(testenv.Digest([]byte(manifests)), "sha256:") + ".yaml"

// recorder is a server a hostile URL might point at: it records every
// request and answers with manifests, so a request that reaches it would
// also succeed.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.String())
		r.mu.Unlock()
		_, _ = w.Write([]byte(manifests))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// countingConfig is the test environment's admin identity, recording the
// paths of the requests sent to the (real) API server with it.
func countingConfig(t *testing.T, paths *[]string, mu *sync.Mutex) *rest.Config {
	cfg := rest.CopyConfig(lazyEnv.Get(t).Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			*paths = append(*paths, r.URL.EscapedPath())
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func artifactAt(u string) *meta.Artifact {
	return &meta.Artifact{URL: u, Digest: testenv.Digest([]byte(manifests))}
}

// TestHostileArtifactURLsAreRefused: an artifact URL comes from a status
// anyone who may write it sets. Against the real API server, each URL
// that is not a rendered artifact of the configured render-controller is
// refused by the fetcher itself (ErrArtifactRefused, not an API error),
// and no request reaches the API server or the server the URL points at.
func TestHostileArtifactURLsAreRefused(t *testing.T) {
	rec := newRecorder(t)
	// A local render-controller that redirects to the recorder.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, rec.URL+renderedPath, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	redirectorHost := strings.TrimPrefix(redirector.URL, "http://")

	var mu sync.Mutex
	var apiPaths []string
	from := inspect.RenderControllerIn("plumb-system")
	from.LocalAddr = redirectorHost
	f, err := inspect.NewArtifactFetcher(countingConfig(t, &apiPaths, &mu), from, inspect.ArtifactFetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(testenv.Digest([]byte(manifests)), "sha256:")
	svc := "http://render-controller.plumb-system.svc.cluster.local."
	recHost := strings.TrimPrefix(rec.URL, "http://")
	for name, u := range map[string]string{
		"traversal to another API path":           svc + "/../../../../../../../api/v1/nodes/n1/proxy/" + hex + ".yaml",
		"traversal inside the artifact shape":     svc + "/kustomization/team-a/../../api/" + hex + ".yaml",
		"a dot segment":                           svc + "/kustomization/./team-a/app/" + hex + ".yaml",
		"encoded traversal":                       svc + "/kustomization/%2e%2e/%2E%2E/api/" + hex + ".yaml",
		"encoded slash":                           svc + "/kustomization/team-a/app%2f..%2f..%2fapi/" + hex + ".yaml",
		"encoded dot segment":                     svc + "/kustomization/%2e/team-a/" + hex + ".yaml",
		"another file than a render":              svc + "/kustomization/team-a/app/index.yaml",
		"another folder than a render's":          svc + "/gitrepository/team-a/app/" + hex + ".yaml",
		"a query":                                 svc + renderedPath + "?x=1",
		"another Service":                         "http://sync-controller.plumb-system.svc" + renderedPath,
		"a Service that only begins like it":      "http://render-controllers.plumb-system.svc" + renderedPath,
		"a shard's Service in another namespace":  "http://render-controller-shard1.team-a.svc" + renderedPath,
		"another namespace":                       "http://render-controller.team-a.svc" + renderedPath,
		"another port":                            "http://render-controller.plumb-system.svc:8080" + renderedPath,
		"https":                                   "https://render-controller.plumb-system.svc" + renderedPath,
		"a host that is not a Service (loopback)": "http://" + recHost + renderedPath,
		"a metadata service":                      "http://169.254.169.254" + renderedPath,
		"a redirect from the local render-controller to elsewhere": redirector.URL + renderedPath,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			mu.Lock()
			apiPaths = nil
			mu.Unlock()
			objs, err := inspect.FetchRendered(context.Background(), f, artifactAt(u))
			g.Expect(err).To(MatchError(inspect.ErrArtifactRefused), "refused by the fetcher, not by whoever answered")
			g.Expect(objs).To(BeNil())
			g.Expect(rec.got()).To(BeEmpty(), "the server the URL points at got no request")
			mu.Lock()
			defer mu.Unlock()
			g.Expect(apiPaths).To(BeEmpty(), "the API server got no request")
		})
	}
}

// TestArtifactThroughTheRealServiceProxy: a rendered artifact of the
// configured Service, or of a shard's (<Service>-<shard>, as
// deploy/components/sharding names them), goes to exactly that Service's
// proxy path on the real API server (which answers 404: envtest has no
// Service nor Pods to proxy to), with nothing else asked.
func TestArtifactThroughTheRealServiceProxy(t *testing.T) {
	for _, service := range []string{"render-controller", "render-controller-shard1"} {
		t.Run(service, func(t *testing.T) {
			g := NewWithT(t)
			var mu sync.Mutex
			var apiPaths []string
			f, err := inspect.NewArtifactFetcher(countingConfig(t, &apiPaths, &mu), inspect.RenderControllerIn("plumb-system"), inspect.ArtifactFetcherOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = inspect.FetchRendered(context.Background(), f, artifactAt("http://"+service+".plumb-system.svc.cluster.local."+renderedPath))
			var status *fetch.StatusError
			g.Expect(errors.As(err, &status)).To(BeTrue(), "%v", err)
			g.Expect(status.Code).To(Equal(http.StatusNotFound))
			mu.Lock()
			defer mu.Unlock()
			g.Expect(apiPaths).To(Equal([]string{"/api/v1/namespaces/plumb-system/services/http:" + service + ":80/proxy" + renderedPath}))
		})
	}
}

// TestArtifactThroughServiceProxy: an artifact URL naming the configured
// Service is fetched through the API server's service proxy path, with
// the caller's credentials, and decoded. The httptest server stands in
// for the API server's proxy endpoint (envtest has no Pods to proxy to).
func TestArtifactThroughServiceProxy(t *testing.T) {
	g := NewWithT(t)
	var gotPath, gotAuth string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		_, _ = w.Write([]byte(manifests))
	}))
	defer api.Close()
	f, err := inspect.NewArtifactFetcher(&rest.Config{Host: api.URL, BearerToken: "secret-token"}, inspect.RenderControllerIn("plumb-system"), inspect.ArtifactFetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := inspect.FetchRendered(context.Background(), f, artifactAt("http://render-controller.plumb-system.svc.cluster.local."+renderedPath))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].GetName()).To(Equal("settings"))
	g.Expect(gotPath).To(Equal("/api/v1/namespaces/plumb-system/services/http:render-controller:80/proxy" + renderedPath))
	g.Expect(gotAuth).To(Equal("Bearer secret-token"))

	for host, want := range map[string][2]string{
		"render-controller.plumb-system.svc":                {"render-controller", "plumb-system"},
		"render-controller.plumb-system.svc.cluster.local":  {"render-controller", "plumb-system"},
		"render-controller.plumb-system.svc.cluster.local.": {"render-controller", "plumb-system"},
		"127.0.0.1":             {},
		"artifacts.example.com": {},
		"a.b.svc.example.com":   {},
	} {
		svc, ns, ok := inspect.InClusterService(host)
		g.Expect(ok).To(Equal(want[0] != ""), host)
		g.Expect([2]string{svc, ns}).To(Equal(want), host)
	}
}

// TestUnreachableRenderControllerIsNamed: when the API server answers
// its service proxy cannot reach render-controller (a 503, as a network
// policy that does not admit the API server makes it answer), the error
// says so and what to change, generic or not; a 404 is not that.
func TestUnreachableRenderControllerIsNamed(t *testing.T) {
	g := NewWithT(t)
	code := http.StatusServiceUnavailable
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "error trying to reach service: dial tcp 10.96.0.12:9090: i/o timeout", code)
	}))
	defer api.Close()
	a := artifactAt("http://render-controller.plumb-system.svc.cluster.local." + renderedPath)
	for _, generic := range []bool{false, true} {
		f, err := inspect.NewArtifactFetcher(&rest.Config{Host: api.URL}, inspect.RenderControllerIn("plumb-system"),
			inspect.ArtifactFetcherOptions{GenericErrors: generic})
		g.Expect(err).NotTo(HaveOccurred())
		code = http.StatusServiceUnavailable
		_, err = inspect.FetchRendered(context.Background(), f, a)
		var artifactErr *inspect.ArtifactError
		g.Expect(errors.As(err, &artifactErr)).To(BeTrue(), "%v", err)
		g.Expect(artifactErr.Unreachable()).To(BeTrue())
		g.Expect(err.Error()).To(ContainSubstring("render-controller-artifacts must admit the API server"))

		code = http.StatusNotFound
		_, err = inspect.FetchRendered(context.Background(), f, a)
		g.Expect(errors.As(err, &artifactErr)).To(BeTrue(), "%v", err)
		g.Expect(artifactErr.Unreachable()).To(BeFalse())
		g.Expect(err.Error()).NotTo(ContainSubstring("must admit"))
	}

	// Given up on by the caller's deadline while retrying, it is still
	// named.
	code = http.StatusServiceUnavailable
	f, err := inspect.NewArtifactFetcher(&rest.Config{Host: api.URL}, inspect.RenderControllerIn("plumb-system"), inspect.ArtifactFetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = inspect.FetchRendered(ctx, f, a)
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("must admit"))
}

// TestLocalRenderController: a render-controller on this machine is
// downloaded from directly, without the caller's credentials; a failure
// is one generic message when asked for, its cause in the log only.
func TestLocalRenderController(t *testing.T) {
	g := NewWithT(t)
	srv := testenv.NewArtifactServer(t)
	a := srv.Serve(renderedPath, "main@sha1:1111111111111111111111111111111111111111", []byte(manifests))
	from := inspect.RenderControllerIn("plumb-system")
	from.LocalAddr = strings.TrimPrefix(srv.URL, "http://")
	var logged []string
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{})
	f, err := inspect.NewArtifactFetcher(&rest.Config{Host: "https://127.0.0.1:1", BearerToken: "secret-token"}, from,
		inspect.ArtifactFetcherOptions{GenericErrors: true, Log: log})
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := inspect.FetchRendered(context.Background(), f, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))

	// Gone: the message says nothing of the answer; errors.As still
	// finds it (the UI's revisions say "no longer served").
	gone := *a
	gone.URL = srv.URL + "/kustomization/team-a/app/" + strings.Repeat("0", 64) + ".yaml"
	_, err = inspect.FetchRendered(context.Background(), f, &gone)
	g.Expect(err).To(MatchError("the rendered artifact could not be downloaded from render-controller"))
	var status *fetch.StatusError
	g.Expect(errors.As(err, &status) && status.Code == http.StatusNotFound).To(BeTrue())
	mu.Lock()
	g.Expect(strings.Join(logged, "\n")).To(ContainSubstring("404"))
	mu.Unlock()

	// Loopback is not allowed unless asked for.
	other := testenv.NewArtifactServer(t)
	b := other.Serve(renderedPath, "r", []byte(manifests))
	_, err = inspect.FetchRendered(context.Background(), f, b)
	g.Expect(err).To(MatchError(inspect.ErrArtifactRefused))
	from.Loopback = true
	f, err = inspect.NewArtifactFetcher(&rest.Config{Host: "https://127.0.0.1:1"}, from, inspect.ArtifactFetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	objs, err = inspect.FetchRendered(context.Background(), f, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
}

// TestArtifactDownloadsAreBounded: the process downloads two artifacts at
// a time; a third caller waits, and gives up with its context without a
// request.
func TestArtifactDownloadsAreBounded(t *testing.T) {
	g := NewWithT(t)
	var inFlight, total atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		total.Add(1)
		inFlight.Add(1)
		defer inFlight.Add(-1)
		<-release
		_, _ = w.Write([]byte(manifests))
	}))
	defer srv.Close()
	from := inspect.RenderControllerIn("plumb-system")
	from.LocalAddr = strings.TrimPrefix(srv.URL, "http://")
	f, err := inspect.NewArtifactFetcher(&rest.Config{Host: "https://127.0.0.1:1"}, from, inspect.ArtifactFetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	a := artifactAt(srv.URL + renderedPath)

	errs := make(chan error, 3)
	for range 2 {
		go func() {
			_, err := inspect.FetchRendered(context.Background(), f, a)
			errs <- err
		}()
	}
	g.Eventually(inFlight.Load).WithTimeout(10 * time.Second).Should(Equal(int32(2)))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := inspect.FetchRendered(ctx, f, a)
		errs <- err
	}()
	g.Consistently(total.Load).WithTimeout(300 * time.Millisecond).Should(Equal(int32(2)))
	cancel()
	g.Expect(<-errs).To(MatchError(context.Canceled))
	g.Expect(total.Load()).To(Equal(int32(2)))
	close(release)
	g.Expect(<-errs).NotTo(HaveOccurred())
	g.Expect(<-errs).NotTo(HaveOccurred())
}

// FuzzInClusterService: artifact URLs come from a status field anyone with
// write access to it can set; only <svc>.<ns>.svc[.cluster.local] may go to
// the service proxy, and the parts must be single DNS labels.
func FuzzInClusterService(f *testing.F) {
	for _, s := range []string{
		"render-controller.plumb-system.svc.cluster.local.", "a.b.svc", "a.b.svc.evil.com",
		"127.0.0.1", "", ".svc", "a..svc", "x.y.svc.cluster.local.extra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		svc, ns, ok := inspect.InClusterService(host)
		if !ok {
			return
		}
		h := strings.TrimSuffix(host, ".")
		if !strings.HasPrefix(h, svc+"."+ns+".svc") || strings.Contains(svc, ".") || strings.Contains(ns, ".") {
			t.Fatalf("%q split into service %q, namespace %q", host, svc, ns)
		}
		rest := strings.TrimPrefix(h, svc+"."+ns+".svc")
		if rest != "" && rest != ".cluster.local" {
			t.Fatalf("%q accepted with trailing %q", host, rest)
		}
	})
}

// FuzzArtifactURL: whatever URL a status holds, the fetcher asks nobody
// but the configured Service's proxy path.
func FuzzArtifactURL(f *testing.F) {
	for _, s := range []string{
		"http://render-controller.plumb-system.svc" + renderedPath,
		"http://render-controller.plumb-system.svc/../api/v1/x",
		"http://render-controller.plumb-system.svc/kustomization/%2e%2e/a/b.yaml",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		var paths []string
		var mu sync.Mutex
		// One attempt is enough to see where it goes; a refusal takes none.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cfg := &rest.Config{Host: "https://api.example:6443", WrapTransport: func(http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				paths = append(paths, r.URL.Path+"|"+r.URL.RawPath+"|"+r.URL.Host)
				mu.Unlock()
				cancel()
				return nil, errors.New("stop")
			})
		}}
		fe, err := inspect.NewArtifactFetcher(cfg, inspect.RenderControllerIn("plumb-system"), inspect.ArtifactFetcherOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = inspect.FetchRendered(ctx, fe, &meta.Artifact{URL: u.String(), Digest: testenv.Digest(nil)})
		for _, p := range paths {
			if !strings.HasPrefix(p, "/api/v1/namespaces/plumb-system/services/http:render-controller:80/proxy/") ||
				strings.Contains(p, "/../") || !strings.HasSuffix(p, "||api.example:6443") {
				t.Fatalf("%q went to %q", raw, p)
			}
		}
	})
}
