package engine

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/testenv"
)

// shared is the API server of the tests that apply for real; the unit
// tests of the package start none.
var shared = testenv.Lazy{Options: []testenv.Option{testenv.WithoutNATS()}}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// envEngine is an engine over the shared API server with its watcher
// running, as sync-controller wires one, its requests seen by wrap (nil
// for none).
type envEngine struct {
	*Engine
	env    *testenv.Environment
	client client.Client
}

func newEnvEngine(t testing.TB, wrap func(http.RoundTripper) http.RoundTripper) *envEngine {
	t.Helper()
	env := shared.Get(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, -1
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(cfg, env.Scheme, mapper, 50*time.Millisecond, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = w.Start(ctx) }()
	if !w.WaitStarted(ctx) {
		t.Fatal("the watcher did not start")
	}
	return &envEngine{Engine: New(c, mapper, w, 16), env: env, client: c}
}

// applyAll prepares objs for owner and applies them kind group by kind
// group, as a sync's wave does, failing the test on any error.
func (e *envEngine) applyAll(t testing.TB, objs []*unstructured.Unstructured, owner manage.Owner) []Result {
	t.Helper()
	return e.applyAllWith(t, objs, Options{Owner: owner})
}

// applyAllWith is applyAll with opts for every ApplySet.
func (e *envEngine) applyAllWith(t testing.TB, objs []*unstructured.Unstructured, opts Options) []Result {
	t.Helper()
	ctx := context.Background()
	hashes, err := e.Prepare(objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	var all []Result
	for _, group := range kindGroups(objs) {
		results, err := e.ApplySet(ctx, group, hashes, opts)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, results...)
	}
	return all
}

// kindGroups splits objs sorted in pkg/object's order into runs of one kind.
func kindGroups(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return object.Less(object.IDOf(sorted[i]), object.IDOf(sorted[j])) })
	var groups [][]*unstructured.Unstructured
	for i, o := range sorted {
		if i == 0 || o.GroupVersionKind().GroupKind() != sorted[i-1].GroupVersionKind().GroupKind() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], o)
	}
	return groups
}

// mixedObjects are n objects in ns, a third each ConfigMaps, headless
// Services and Deployments, as sync-controller's bench generates them.
func mixedObjects(ns string, n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, n)
	for i := range n {
		var o map[string]any
		switch i % 3 {
		case 0:
			name := fmt.Sprintf("configmap-%04d", i)
			o = map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns,
					"labels": map[string]any{"app.kubernetes.io/name": "bench", "app.kubernetes.io/component": name}},
				"data": map[string]any{"key": name,
					"settings.yaml": "name: " + name + "\nreplicas: 1\nfeatures: [alpha, beta, gamma]\nendpoint: https://example.invalid/" + name + "\n"}}
		case 1:
			name := fmt.Sprintf("service-%04d", i)
			o = map[string]any{"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "namespace": ns,
					"labels": map[string]any{"app.kubernetes.io/name": "bench", "app.kubernetes.io/component": name}},
				"spec": map[string]any{"clusterIP": "None", "selector": map[string]any{"app": name},
					"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}}
		default:
			name := fmt.Sprintf("deployment-%04d", i)
			o = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "namespace": ns,
					"labels": map[string]any{"app.kubernetes.io/name": "bench", "app.kubernetes.io/component": name}},
				"spec": map[string]any{"replicas": int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": name}},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "app", "image": "registry.example/app:1.0",
							"ports":     []any{map[string]any{"containerPort": int64(8080)}},
							"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
						}}}}}}
		}
		objs = append(objs, &unstructured.Unstructured{Object: o})
	}
	return objs
}
