package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderfeed"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/pkg/testenv"
)

// Shared by every test of the package: one control plane, one manager
// running the reconciler, one render storage with its HTTP server, and one
// HTTP server standing in for source-controller's artifact server.
var (
	env        *testenv.Environment
	k8s        client.Client
	storage    *artifact.Storage
	reconciler *KustomizationReconciler
	helmRec    *HelmReleaseReconciler
	// cached reads the suite manager's cache itself: its client reads
	// ConfigMaps and Secrets from the API server.
	cached    client.Reader
	published = &capture{}
	// apiRequests counts the requests of the suite's manager.
	apiRequests = &testenv.Requests{}
	sources     = &sourceServer{files: map[string][]byte{}}
	sourceURL   string
	// feed is the render feed of the storage's server.
	feed *renderfeed.Feed
	// workRoot holds the reconciler's downloads and extracted trees.
	workRoot string
	// pluginDir holds the sockets of the plugins the tests start
	// (plugin_test.go).
	pluginDir string
)

// Limits of the reconciler under test: small, so the oversize cases stay
// small too.
var (
	testLimits       = artifact.Limits{MaxArchiveBytes: 1 << 20, MaxExtractedBytes: 256 << 10, MaxFiles: 100}
	testRenderLimits = render.Limits{MaxOutputBytes: 64 << 10}
)

// testRenderTimeout is far above what the tests' good renders take (a few
// milliseconds) and far below what slowTree takes. It counts from the
// reconcile, so a render that had to wait for a worker to start would
// spend it starting one, which on a loaded machine can take longer: a
// test whose good render follows a start of the pool or the kill of a
// worker waits for an idle one first (waitIdleWorker).
const testRenderTimeout = 3 * time.Second

// leakURL is served by a server that must never be reached: rendering
// never fetches.
var (
	leakURL  string
	leakHits atomic.Int64
)

const (
	timeout = 30 * time.Second
	poll    = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	// The reconcilers render in workers: this test binary started again.
	renderworker.ServeIfWorker()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// PLUMB_TEST_LOG=1 shows the controller's log.
	if os.Getenv("PLUMB_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client

	srcSrv := httptest.NewServer(sources)
	defer srcSrv.Close()
	sourceURL = srcSrv.URL

	leakSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		leakHits.Add(1)
		_, _ = io.WriteString(w, "leaked")
	}))
	defer leakSrv.Close()
	leakURL = leakSrv.URL + "/internal"

	dir, err := os.MkdirTemp("", "plumb-render-storage-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if storage, err = artifact.NewStorage(dir, "", 2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The feed of renders (renderfeed.go) is served as main.go serves it;
	// no test but those of renderfeed_test.go subscribes, so every other
	// render is written to status as without a feed.
	feed = &renderfeed.Feed{}
	fileServer := artifact.NewServer("127.0.0.1:0", storage, artifact.WithHandler(renderfeed.Path, feed))
	addr, err := fileServer.Listen()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	storage.Hostname = addr.String()

	// The suite's instance is the main shard: objects labelled with
	// shardLabel belong to the instances the tests start (startShard).
	mgrOpts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 4, WatchLabelSelector: "!" + shardLabel}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = apiRequests.Wrap
	mgr, err := app.NewTrimmingManager(ControllerName, cfg, env.Scheme, mgrOpts, CacheTrims(), &kustomizev1.Kustomization{}, &helmv2.HelmRelease{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cached = mgr.GetCache()
	if err := mgr.Add(fileServer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Stream events go to the real JetStream publisher and to an in-memory
	// copy the tests read directly.
	natsOpts := options.NATS{URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 1000}
	js, err := events.NewJetStreamPublisher(natsOpts, ControllerName, logr.Discard())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.Close(closeCtx)
	}()
	// Downloads and extracted trees go here, so that tests can look at
	// what a render leaves on disk.
	if workRoot, err = os.MkdirTemp("", "plumb-render-work-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workRoot)
	if pluginDir, err = os.MkdirTemp("", "plumb-plugins-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(pluginDir)
	reconciler = &KustomizationReconciler{
		PluginDir:            pluginDir,
		TmpDir:               workRoot,
		Client:               mgr.GetClient(),
		Storage:              storage,
		Events:               events.NewRecorder(mgr.GetEventRecorder(ControllerName), tee{published, js}, env.Scheme, ControllerName),
		Metrics:              NewMetrics(metrics.Registry),
		Limits:               testLimits,
		RenderLimits:         testRenderLimits,
		RenderTimeout:        testRenderTimeout,
		NoCrossNamespaceRefs: true,
		DependencyRequeue:    time.Second,
		DownloadAttempts:     2,
		DownloadBackoff:      10 * time.Millisecond,
		Feed:                 feed,
		RenderGrace:          testRenderGrace,
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := reconciler.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	helmRec = &HelmReleaseReconciler{
		Client:               mgr.GetClient(),
		Storage:              storage,
		Events:               reconciler.Events,
		Metrics:              NewHelmReleaseMetrics(metrics.Registry),
		Capabilities:         &Capabilities{Discovery: disc, TTL: time.Hour},
		HelmLimits:           testHelmLimits,
		RenderLimits:         testRenderLimits,
		RenderTimeout:        testRenderTimeout,
		NoCrossNamespaceRefs: true,
		DependencyRequeue:    time.Second,
		DownloadAttempts:     2,
		DownloadBackoff:      10 * time.Millisecond,
	}
	if err := helmRec.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The first tests' renders find a worker started (waitIdleWorker).
	for _, p := range []*renderworker.Pool{reconciler.pool, helmRec.pool} {
		for start := time.Now(); p.Idle() == 0; time.Sleep(poll) {
			if time.Since(start) > 5*time.Minute {
				cancel()
				fmt.Fprintln(os.Stderr, "no render worker started in 5 minutes")
				return 1
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	defer stopPlugins()
	code := m.Run()
	if n := leakHits.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "rendering reached the network: the leak server got %d requests\n", n)
		return 1
	}
	return code
}

// aliasBomb is a ConfigMap of a few hundred bytes whose aliases expand to
// 9^(levels+1) scalars.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [x,x,x,x,x,x,x,x,x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	return b.String()
}

// slowTree is a kustomization of 4,000 small ConfigMaps in 80 files
// (within testLimits): kustomize takes tens of seconds over it, since it
// checks each new object against all before it, and stops at the next
// file it reads once the render's deadline has passed. Its namePrefix
// keeps it off the render's fast path (docs/design/render-fast-path.md),
// which would read the same files in well under the deadline.
func slowTree() map[string]string {
	files := map[string]string{}
	var list strings.Builder
	list.WriteString("namePrefix: slow-\nresources:\n")
	for f := 0; f < 80; f++ {
		var b strings.Builder
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c%d-%d}}\n", f, i)
		}
		name := fmt.Sprintf("cm%02d.yaml", f)
		files[name] = b.String()
		fmt.Fprintf(&list, "- %s\n", name)
	}
	files["kustomization.yaml"] = list.String()
	return files
}

// --- the stand-in for source-controller's artifact server ---

type sourceServer struct {
	mu    sync.Mutex
	files map[string][]byte
	gets  map[string]int
}

func (s *sourceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	if s.gets == nil {
		s.gets = map[string]int{}
	}
	s.gets[r.URL.Path]++
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// downloads is how many times the artifact was requested.
func (s *sourceServer) downloads(a *meta.Artifact) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets["/"+a.Path]
}

// serve publishes data at path and returns the artifact describing it;
// digest overrides the real digest when not empty (a tampered artifact).
func (s *sourceServer) serve(path, revision string, data []byte, digest string) *meta.Artifact {
	s.mu.Lock()
	s.files[path] = data
	s.mu.Unlock()
	if digest == "" {
		digest = fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	}
	size := int64(len(data))
	return &meta.Artifact{
		Path: strings.TrimPrefix(path, "/"), URL: sourceURL + path, Revision: revision,
		Digest: digest, Size: &size, LastUpdateTime: metav1.Now(),
	}
}

// packTree writes files into a temporary folder and packs it with
// pkg/artifact's Pack, as source-controller does.
func packTree(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := artifact.Pack(context.Background(), &buf, dir, artifact.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// --- the stream ---

// tee publishes to several publishers.
type tee []events.Publisher

func (t tee) Publish(e events.Event) {
	for _, p := range t {
		p.Publish(e)
	}
}

type capture struct {
	mu     sync.Mutex
	events []events.Event
}

func (c *capture) Publish(e events.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// of returns the events about one Kustomization with the given reason.
func (c *capture) of(ns, name, reason string) []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []events.Event
	for _, e := range c.events {
		if e.InvolvedObject.Namespace == ns && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// all returns every event about one object.
func (c *capture) all(ns, name string) []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []events.Event
	for _, e := range c.events {
		if e.InvolvedObject.Namespace == ns && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// waitIdleWorker waits until p has a worker started and idle, so that the
// next render spends its time limit rendering, not waiting for a worker
// to start (testRenderTimeout).
func waitIdleWorker(t *testing.T, p *renderworker.Pool) {
	t.Helper()
	NewWithT(t).Eventually(p.Idle).WithTimeout(5*time.Minute).WithPolling(poll).Should(BeNumerically(">=", 1),
		"a render worker started")
}

// --- object helpers ---

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.Namespace(context.Background(), "render")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// gitRepo creates a GitRepository and, when a is not nil, gives it that
// artifact through the status subresource (source-controller does not run
// here).
func gitRepo(t *testing.T, ns, name string, a *meta.Artifact) {
	t.Helper()
	g := NewWithT(t)
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://git.example/" + name, Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	if a != nil {
		setArtifact(t, ns, name, a)
	}
}

// setArtifact writes status.artifact of a GitRepository, as source-controller would.
func setArtifact(t *testing.T, ns, name string, a *meta.Artifact) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() error {
		var repo sourcev1.GitRepository
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &repo); err != nil {
			return err
		}
		repo.Status.Artifact = a
		return k8s.Status().Update(context.Background(), &repo)
	}, timeout, poll).Should(Succeed())
}

// publishTree packs files, serves them and sets them as the GitRepository's
// artifact at revision.
func publishTree(t *testing.T, ns, repo, revision string, files map[string]string) *meta.Artifact {
	t.Helper()
	data := packTree(t, files)
	a := sources.serve(fmt.Sprintf("/gitrepository/%s/%s/%s.tar.gz", ns, repo, revision), "main@sha1:"+revision, data, "")
	setArtifact(t, ns, repo, a)
	return a
}

// kustomization creates a Kustomization of the repo's root, with mutate's
// changes to its spec (createKustomization: to the whole object).
func kustomization(t *testing.T, ns, name, repo string, mutate func(*kustomizev1.KustomizationSpec)) *kustomizev1.Kustomization {
	t.Helper()
	return createKustomization(t, ns, name, repo, func(ks *kustomizev1.Kustomization) {
		if mutate != nil {
			mutate(&ks.Spec)
		}
	})
}

// createKustomization creates a Kustomization of the repo's root, with
// mutate's changes to the whole object.
func createKustomization(t *testing.T, ns, name, repo string, mutate func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	t.Helper()
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repo},
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
		},
	}
	if mutate != nil {
		mutate(ks)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), ks)).To(Succeed())
	return ks
}

func getKS(g Gomega, ns, name string) *kustomizev1.Kustomization {
	var ks kustomizev1.Kustomization
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &ks)).To(Succeed())
	return &ks
}

func renderedCondition(ks *kustomizev1.Kustomization) *metav1.Condition {
	for i := range ks.Status.Conditions {
		if ks.Status.Conditions[i].Type == kustomizev1.RenderedCondition {
			return &ks.Status.Conditions[i]
		}
	}
	return nil
}

// waitRendered waits until Rendered has status and reason for the current
// generation and returns the object.
func waitRendered(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *kustomizev1.Kustomization {
	t.Helper()
	g := NewWithT(t)
	var ks *kustomizev1.Kustomization
	g.Eventually(func(g Gomega) {
		ks = getKS(g, ns, name)
		c := renderedCondition(ks)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(ks.Generation))
	}, timeout, poll).Should(Succeed())
	return ks
}

// waitRevision waits until the rendered artifact has the revision.
func waitRevision(t *testing.T, ns, name, revision string) *kustomizev1.Kustomization {
	t.Helper()
	g := NewWithT(t)
	var ks *kustomizev1.Kustomization
	g.Eventually(func(g Gomega) {
		ks = getKS(g, ns, name)
		g.Expect(ks.Status.RenderedArtifact).NotTo(BeNil())
		g.Expect(ks.Status.RenderedArtifact.Revision).To(Equal(revision))
		c := renderedCondition(ks)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, timeout, poll).Should(Succeed())
	return ks
}

// download fetches a rendered artifact over HTTP and checks its digest.
func download(t *testing.T, a *meta.Artifact) string {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(a.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fmt.Sprintf("sha256:%x", sha256.Sum256(body))).To(Equal(a.Digest))
	return string(body)
}
