package controller

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/testgit"
	"plumb.dev/source-controller/internal/bucket"
	"plumb.dev/source-controller/internal/egress"
)

// testAddresses is the reconcilers' address policy: the test servers
// listen on 127.0.0.1, so loopback is allowed as make run and the e2e
// tests allow it (--allowed-private-networks=127.0.0.0/8,::1).
var testAddresses = egress.Policy([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")})

// Shared by every test of the package: one control plane, one NATS, one
// manager running the reconciler, one Git server.
var (
	env     *testenv.Environment
	k8s     client.Client
	storage *artifact.Storage
	gitSrv  *testgit.Server
	natsOpt options.NATS
	// chartWorkers load and package the HelmCharts of every reconciler.
	chartWorkers *renderworker.Pool
)

const (
	gitUser     = "git"
	gitPassword = "s3cret"
	timeout     = 30 * time.Second
	poll        = 100 * time.Millisecond
	// maxRepositorySize is the reconciler's --max-repository-size: far
	// above the few kilobytes of every test's repository but the one
	// that tests the limit.
	maxRepositorySize = 1 << 20
	// maxIndexSize and maxChartSize are the Helm reconcilers' limits: far
	// above the tests' indexes and charts but those that test them.
	maxIndexSize = 256 << 10
	maxChartSize = 256 << 10
	// maxOCILayerSize is the OCIRepository reconciler's
	// --oci-max-layer-size.
	maxOCILayerSize     = 64 << 10
	maxOCIExtractedSize = 256 << 10
	// maxBucketObjects, maxBucketObjectSize and maxBucketSize are the
	// Bucket reconciler's limits.
	maxBucketObjects    = 20
	maxBucketObjectSize = 64 << 10
	maxBucketSize       = 256 << 10
	// chartWorkerMemory is --chart-worker-memory: ample for the tests'
	// charts, small enough for a hostile values file of a repository
	// within maxRepositorySize to pass it.
	chartWorkerMemory = 96 << 20
)

func TestMain(m *testing.M) {
	// The HelmChart reconciler's chart workers are this test binary
	// started again (pkg/renderworker).
	renderworker.ServeIfWorker()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client

	if gitSrv, err = testgit.NewServer(testgit.Options{Username: gitUser, Password: gitPassword}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer gitSrv.Close()

	dir, err := os.MkdirTemp("", "plumb-source-storage-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if storage, err = artifact.NewStorage(dir, "", 2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fileServer := artifact.NewServer("127.0.0.1:0", storage)
	addr, err := fileServer.Listen()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	storage.Hostname = addr.String()

	// The main instance of a sharded install: the shards of shard_test.go
	// take the labelled sources.
	mgrOpts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 4, WatchLabelSelector: "!" + meta.ShardKeyLabel}
	mgr, err := app.NewManager(ControllerName, env.Config, env.Scheme, mgrOpts,
		&sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{}, &sourcev1.Bucket{}, &sourceextv1beta1.ArtifactGenerator{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := mgr.Add(fileServer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	natsOpt = options.NATS{URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 1000}
	publisher, err := events.NewJetStreamPublisher(natsOpt, ControllerName, logr.Discard())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := &GitRepositoryReconciler{
		Client:  mgr.GetClient(),
		Storage: storage,
		Events:  events.NewRecorder(mgr.GetEventRecorder(ControllerName), publisher, env.Scheme, ControllerName),
		Metrics: NewMetrics(ctrlmetrics.Registry),

		MaxRepositorySize: maxRepositorySize,
		Addresses:         testAddresses,
	}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorder := events.NewRecorder(mgr.GetEventRecorder(ControllerName), publisher, env.Scheme, ControllerName)
	helmRepos := &HelmRepositoryReconciler{
		Client:       mgr.GetClient(),
		Storage:      storage,
		Events:       recorder,
		Metrics:      NewHelmRepositoryMetrics(ctrlmetrics.Registry),
		MaxIndexSize: maxIndexSize,
		Addresses:    testAddresses,
	}
	if err := helmRepos.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ociRepos := &OCIRepositoryReconciler{
		Client:           mgr.GetClient(),
		Storage:          storage,
		Events:           recorder,
		Metrics:          NewOCIRepositoryMetrics(ctrlmetrics.Registry),
		MaxLayerSize:     maxOCILayerSize,
		MaxExtractedSize: maxOCIExtractedSize,
		Addresses:        testAddresses,
	}
	if err := ociRepos.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buckets := &BucketReconciler{
		Client:    mgr.GetClient(),
		Storage:   storage,
		Events:    recorder,
		Metrics:   NewBucketMetrics(ctrlmetrics.Registry),
		Limits:    bucketLimits,
		Addresses: testAddresses,
	}
	if err := buckets.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	chartWorkers = NewChartWorkers(DefaultChartWorkers, chartWorkerMemory, 0, logr.Discard())
	defer chartWorkers.Close()
	helmCharts := &HelmChartReconciler{
		Client:       mgr.GetClient(),
		Storage:      storage,
		Events:       recorder,
		Metrics:      NewHelmChartMetrics(ctrlmetrics.Registry),
		MaxChartSize: maxChartSize,
		Addresses:    testAddresses,
		Packager:     chartWorkers,
	}
	if err := helmCharts.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	generators := &ArtifactGeneratorReconciler{
		Client:            mgr.GetClient(),
		Storage:           storage,
		Events:            recorder,
		Metrics:           NewArtifactGeneratorMetrics(ctrlmetrics.Registry),
		RequeueDependency: time.Second,
	}
	if err := generators.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		<-done
		closeCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = publisher.Close(closeCtx)
	}()
	return m.Run()
}

// bucketLimits are the Bucket reconcilers' limits.
var bucketLimits = bucket.Limits{MaxObjects: maxBucketObjects, MaxObjectSize: maxBucketObjectSize, MaxTotalSize: maxBucketSize}

// --- helpers ---

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// repoFor creates a Git repository named after the test.
func repoFor(t *testing.T) *testgit.Repo {
	t.Helper()
	name := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	repo, err := gitSrv.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.Namespace(context.Background(), "source")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func credentials(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func basicAuth(t *testing.T, ns string) *meta.LocalObjectReference {
	credentials(t, ns, "git-auth", map[string]string{"username": gitUser, "password": gitPassword})
	return &meta.LocalObjectReference{Name: "git-auth"}
}

func newGitRepository(ns, name, url string, secret *meta.LocalObjectReference, ref *sourcev1.GitRepositoryRef) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			SecretRef: secret,
			Interval:  metav1.Duration{Duration: time.Hour},
			Timeout:   &metav1.Duration{Duration: 20 * time.Second},
			Reference: ref,
		},
	}
}

func get(g Gomega, key types.NamespacedName) *sourcev1.GitRepository {
	var obj sourcev1.GitRepository
	g.Expect(k8s.Get(context.Background(), key, &obj)).To(Succeed())
	return &obj
}

func condition(obj *sourcev1.GitRepository, t string) *metav1.Condition {
	for i := range obj.Status.Conditions {
		if obj.Status.Conditions[i].Type == t {
			return &obj.Status.Conditions[i]
		}
	}
	return nil
}

// waitReady waits for Ready=True on the object's current generation with an
// artifact of the given revision and returns the object.
func waitReady(t *testing.T, key types.NamespacedName, revision string) *sourcev1.GitRepository {
	t.Helper()
	var obj *sourcev1.GitRepository
	NewWithT(t).Eventually(func(g Gomega) {
		obj = get(g, key)
		ready := condition(obj, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(obj.Status.Artifact).NotTo(BeNil())
		g.Expect(obj.Status.Artifact.Revision).To(Equal(revision))
	}, timeout, poll).Should(Succeed())
	return obj
}

// waitFailed waits for Ready=False with the reason on the current generation.
func waitFailed(t *testing.T, key types.NamespacedName, reason string) *sourcev1.GitRepository {
	t.Helper()
	var obj *sourcev1.GitRepository
	NewWithT(t).Eventually(func(g Gomega) {
		obj = get(g, key)
		ready := condition(obj, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
		g.Expect(ready.ObservedGeneration).To(Equal(obj.Generation))
	}, timeout, poll).Should(Succeed())
	return obj
}

// requestReconcile sets the requestedAt annotation and waits until the
// controller has handled it.
func requestReconcile(t *testing.T, key types.NamespacedName, token string) *sourcev1.GitRepository {
	t.Helper()
	g := NewWithT(t)
	obj := get(g, key)
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[meta.ReconcileRequestAnnotation] = token
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		obj = get(g, key)
		g.Expect(obj.Status.LastHandledReconcileAt).To(Equal(token))
	}, timeout, poll).Should(Succeed())
	return obj
}

// download fetches the artifact over HTTP and checks its sha256 against
// the status; it returns the archive's bytes.
func download(t *testing.T, a *meta.Artifact) []byte {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(a.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fmt.Sprintf("sha256:%x", sha256.Sum256(body))).To(Equal(a.Digest))
	g.Expect(int64(len(body))).To(Equal(*a.Size))
	return body
}

// files lists an archive's entries with their contents.
func files(t *testing.T, archive []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func keyOf(obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
