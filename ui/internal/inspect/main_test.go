package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(testenv.Run(m, &env, testenv.WithoutNATS()))
}

// testOptions download rendered artifacts from the tests' artifact
// servers, render-controllers on this machine (any loopback address, as
// in kubeconfig mode).
var testOptions = Options{RenderController: inspect.RenderController{
	Namespace: "plumb-system", Service: "render-controller", Port: 80, Loopback: true}}

// userHeader picks the identity of a test request: empty is the
// administrator, any other value a user impersonated with that name.
const userHeader = "X-Test-User"

// newServer serves the object pages, each request with the identity its
// userHeader names, as the UI's server does with a session's.
func newServer(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	Routes(mux, func(r *http.Request) (client.Client, *rest.Config, error) {
		cfg := rest.CopyConfig(env.Config)
		if user := r.Header.Get(userHeader); user != "" {
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		return c, cfg, err
	}, testOptions)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// response is one answer: its status and raw body.
type response struct {
	status int
	body   string
}

func (r response) String() string { return fmt.Sprintf("HTTP %d %s", r.status, r.body) }

// decode decodes the body into v.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decoding %s: %v", r, err)
	}
}

func do(t testing.TB, srv *httptest.Server, method, path, user, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: string(data)}
}

func newNamespace(t testing.TB) (context.Context, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "ui")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, ns
}

func create(ctx context.Context, t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// setStatus writes obj's status as a controller would.
func setStatus[T client.Object](ctx context.Context, t testing.TB, obj T, mutate func(T)) {
	t.Helper()
	testenv.SetStatus(ctx, t, env.Client, obj, mutate)
}

// serveRender publishes data as render-controller names a render (<hex
// digest>.yaml in the object's folder) and returns its artifact.
func serveRender(s *testenv.ArtifactServer, dir, revision string, data []byte) *meta.Artifact {
	return s.Serve(dir+"/"+strings.TrimPrefix(testenv.Digest(data), "sha256:")+".yaml", revision, data)
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Minute},
			Prune:     true,
		},
	}
}

// syncAsController applies the render's objects that are no hook as
// sync-controller does (stamped, server-side apply as plumb-sync) and
// records them and the artifact in the Kustomization's status, with a
// finished sync of that render started at started, and its history entry.
func syncAsController(ctx context.Context, t testing.TB, ks *kustomizev1.Kustomization, a *meta.Artifact, data []byte, started time.Time) {
	t.Helper()
	applied := testenv.ApplyAsSyncController(ctx, t, env.Client, inspect.AppliedKustomization(ks), data)
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.RenderedArtifact = a
		o.Status.Inventory = inventory.New(applied)
		o.Status.LastAppliedRevision = a.Revision
		o.Status.LastAttemptedRevision = a.Revision
		start := metav1.NewTime(started.Truncate(time.Second))
		o.Status.Sync = &kustomizev1.SyncProgress{Revision: a.Revision, Digest: a.Digest, Generation: o.Generation,
			Phase: kustomizev1.PhaseSucceeded, StartedAt: &start, FinishedAt: &start}
		o.Status.History = meta.History{{Digest: a.Digest, FirstReconciled: start, LastReconciled: start,
			LastReconciledStatus: meta.SucceededReason, TotalReconciliations: 1, Metadata: map[string]string{meta.HistoryRevisionKey: a.Revision}}}
	})
}
