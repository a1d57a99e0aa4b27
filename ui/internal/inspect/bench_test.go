package inspect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/testenv"
)

// bigTree is a Kustomization of 2,000 objects (100 Deployments, 1,900
// ConfigMaps) with its render served, made once for the test and the
// benchmark that share it.
var bigTree struct {
	once sync.Once
	path string
	err  error
}

const (
	bigDeployments = 100
	bigConfigMaps  = 1900
)

func bigTreePath(t testing.TB) string {
	t.Helper()
	bigTree.once.Do(func() { bigTree.path, bigTree.err = makeBigTree() })
	if bigTree.err != nil {
		t.Fatal(bigTree.err)
	}
	return bigTree.path
}

func makeBigTree() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "ui-big")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := range bigDeployments {
		fmt.Fprintf(&b, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%d
  annotations:
    plumb.dev/sync-wave: "%d"
spec:
  selector:
    matchLabels: {app: web-%d}
  template:
    metadata:
      labels: {app: web-%d}
    spec:
      containers:
        - name: web
          image: nginx
---
`, i, i%3, i, i)
	}
	for i := range bigConfigMaps {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  n: %q\n---\n", i, fmt.Sprint(i))
	}
	data := []byte(b.String())
	// The render outlives the test that makes it: the benchmark reads it
	// too. The process's end closes the server.
	arts := testenv.StartArtifactServer()
	ks := kustomization(ns, "big")
	if err := env.Client.Create(ctx, ks); err != nil {
		return "", err
	}
	a := serveRender(arts, "/kustomization/"+ns+"/big", "main@sha1:7777777777777777777777777777777777777777", data)
	objs, err := object.DecodeManifests(data)
	if err != nil {
		return "", err
	}
	view := inspect.AppliedKustomization(ks)
	for _, o := range objs {
		if err := view.Prepare(env.Client, o); err != nil {
			return "", err
		}
	}
	// Applied eight at a time: the fixture, not the code measured.
	work := make(chan *unstructured.Unstructured)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for o := range work {
				if err := manage.Apply(ctx, env.Client, o.DeepCopy()); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	ks.Status.RenderedArtifact = a
	ks.Status.Inventory = inventory.New(objs)
	ks.Status.LastAppliedRevision = a.Revision
	if err := env.Client.Status().Update(ctx, ks); err != nil {
		return "", err
	}
	return "/api/objects/kustomization/" + ns + "/big", nil
}

// countingServer serves the pages as the administrator and counts the
// requests they make to the API server.
func countingServer(t testing.TB) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	mux := http.NewServeMux()
	Routes(mux, func(r *http.Request) (client.Client, *rest.Config, error) {
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 1000, 1000
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				n.Add(1)
				return rt.RoundTrip(req)
			})
		})
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		return c, cfg, err
	}, testOptions)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestATreeOf2000ObjectsIsReadByListingPerKind(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 2,000 objects")
	}
	g := NewWithT(t)
	path := bigTreePath(t)
	srv, requests := countingServer(t)
	r := do(t, srv, http.MethodGet, path, "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String()[:min(len(r.String()), 500)])
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.Tree).To(HaveLen(bigDeployments + bigConfigMaps))
	waves := map[int]int{}
	for _, n := range page.Tree {
		if n.Kind == "Deployment" {
			waves[n.Wave]++
			g.Expect(n.Health).NotTo(BeEmpty())
		}
	}
	g.Expect(waves).To(HaveLen(3))
	// Discovery, the object, a list per kind (paged by 500) and the owned
	// ReplicaSets and Pods: tens of requests, not thousands.
	t.Logf("%d API requests for a tree of %d objects", requests.Load(), len(page.Tree))
	g.Expect(requests.Load()).To(BeNumerically("<", 40))
}

func BenchmarkObjectPageWith2000Objects(b *testing.B) {
	path := bigTreePath(b)
	srv, requests := countingServer(b)
	requests.Store(0)
	b.ResetTimer()
	for b.Loop() {
		r := do(b, srv, http.MethodGet, path, "", "")
		if r.status != http.StatusOK {
			b.Fatal(r.String())
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "apirequests/op")
}
