package helm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// loopback is the address policy of the tests, whose servers listen on
// 127.0.0.1.
var loopback = netguard.Policy{AllowLoopback: true}

func chartOf(name, version string) testhelm.Chart {
	return testhelm.Chart{Name: name, Version: version, Files: testhelm.Files{
		"values.yaml":       "a: 1\n",
		"templates/cm.yaml": "kind: ConfigMap\n",
		"files/z.txt":       "z",
		"files/a.txt":       "a",
	}}
}

func TestPackageIsDeterministicWhateverTheFileOrder(t *testing.T) {
	tgz, err := testhelm.Package(chartOf("app", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	one, err := helm.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	two, err := helm.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	// The same chart with its files and times in another order.
	two.Files[0], two.Files[1] = two.Files[1], two.Files[0]
	two.ModTime = time.Now()
	a, err := helm.Package(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := helm.Package(two)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same chart packaged to different bytes")
	}
	if _, err := helm.LoadArchive(a); err != nil {
		t.Fatal(err)
	}
}

func TestMergeValuesFiles(t *testing.T) {
	c := chartOf("app", "1.0.0")
	c.Files["values.yaml"] = "a: 1\nm:\n  x: 1\n  w: 1\n"
	c.Files["one.yaml"] = "m:\n  x: 2\n"
	c.Files["two.yaml"] = "m:\n  w: 3\nb: true\n"
	c.Files["bad.yaml"] = "- a list\n"
	ch, err := testhelm.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := helm.MergeValuesFiles(ch, []string{"values.yaml", "one.yaml", "two.yaml"}); err != nil {
		t.Fatal(err)
	}
	tgz, err := helm.Package(ch)
	if err != nil {
		t.Fatal(err)
	}
	back, err := helm.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	m := back.Values["m"].(map[string]any)
	if back.Values["a"] != float64(1) || m["x"] != float64(2) || m["w"] != float64(3) || back.Values["b"] != true {
		t.Fatalf("merged values %v", back.Values)
	}
	if err := helm.MergeValuesFiles(ch, []string{"missing.yaml"}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("a missing values file: %v", err)
	}
	if err := helm.MergeValuesFiles(ch, []string{"bad.yaml"}); err == nil {
		t.Fatal("a values file that is not a map was merged")
	}
}

// Chart.lock pins a dependency's version over Chart.yaml's range; a
// file:// dependency may not leave the source.
func TestDependencies(t *testing.T) {
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if err := repo.Add(chartOf("common", v)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := repo.Index()
	if err != nil {
		t.Fatal(err)
	}
	index, err := helm.ParseIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := &helm.Fetcher{RepoURL: repo.URL(), Timeout: 10 * time.Second, Addresses: loopback}
	deps := helm.Dependencies{
		MaxChartBytes: 1 << 20,
		Repository: func(url string) (*helm.Repository, error) {
			if url != repo.URL() {
				return nil, errors.New("no repository serves " + url)
			}
			return &helm.Repository{URL: url, Index: index, Fetcher: f}, nil
		},
	}
	app := chartOf("app", "1.0.0")
	app.Dependencies = []*chart.Dependency{{Name: "common", Version: "^1", Repository: repo.URL()}}
	app.Files["Chart.lock"] = "dependencies:\n- name: common\n  version: 1.0.0\n  repository: " + repo.URL() + "\ndigest: sha256:0\ngenerated: \"2020-01-01T00:00:00Z\"\n"
	ch, err := testhelm.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := deps.Build(context.Background(), ch, ""); err != nil {
		t.Fatal(err)
	}
	if len(ch.Dependencies()) != 1 || ch.Dependencies()[0].Metadata.Version != "1.0.0" {
		t.Fatalf("dependencies %v", ch.Dependencies())
	}

	// Without the lock, the newest in range.
	delete(app.Files, "Chart.lock")
	ch, err = testhelm.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := deps.Build(context.Background(), ch, ""); err != nil {
		t.Fatal(err)
	}
	if ch.Dependencies()[0].Metadata.Version != "1.1.0" {
		t.Fatalf("dependency version %s", ch.Dependencies()[0].Metadata.Version)
	}

	// A repository no HelmRepository serves.
	app.Dependencies = []*chart.Dependency{{Name: "other", Version: "*", Repository: "https://example.invalid/charts"}}
	ch, err = testhelm.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := deps.Build(context.Background(), ch, ""); err == nil || !strings.Contains(err.Error(), "no repository serves") {
		t.Fatalf("an unserved repository: %v", err)
	}

	// file:// out of the source.
	root := t.TempDir()
	outside := t.TempDir()
	for dir, c := range map[string]testhelm.Chart{filepath.Join(root, "app"): app, filepath.Join(outside, "lib"): chartOf("lib", "1.0.0")} {
		files, err := testhelm.ChartFiles(c, "")
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rel, err := filepath.Rel(filepath.Join(root, "app"), filepath.Join(outside, "lib"))
	if err != nil {
		t.Fatal(err)
	}
	app.Dependencies = []*chart.Dependency{{Name: "lib", Version: "1.0.0", Repository: "file://" + rel}}
	ch, err = testhelm.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	inSource := helm.Dependencies{Root: root}
	if err := inSource.Build(context.Background(), ch, filepath.Join(root, "app")); err == nil || !strings.Contains(err.Error(), "leaves the source") {
		t.Fatalf("a file:// dependency outside the source: %v", err)
	}
}

// A server slower than the timeout, and one sending more than the limit.
func TestFetcherBounds(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	f := helm.Fetcher{RepoURL: slow.URL, Timeout: 200 * time.Millisecond, Addresses: loopback}
	if _, err := f.Get(slow.URL+"/index.yaml", 1<<20); err == nil {
		t.Fatal("a request outlived its timeout")
	}

	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer big.Close()
	f = helm.Fetcher{RepoURL: big.URL, Timeout: 10 * time.Second, Addresses: loopback}
	if _, err := f.Get(big.URL+"/index.yaml", 1<<20); !errors.Is(err, helm.ErrTooLarge) {
		t.Fatalf("a response over the limit: %v", err)
	}
	if b, err := f.Get(big.URL+"/index.yaml", 8<<20); err != nil || len(b) != 4<<20 {
		t.Fatalf("a response under the limit: %d bytes, %v", len(b), err)
	}
}

func TestOCIRef(t *testing.T) {
	for in, want := range map[string]string{
		"oci://127.0.0.1:5000/charts":  "127.0.0.1:5000/charts",
		"oci://ghcr.io/org/charts/":    "ghcr.io/org/charts",
		"oci://registry.example":       "registry.example",
		"oci://r.example/charts:1.0.0": "",
		"oci://user:pw@r.example/c":    "",
		"https://r.example/c":          "",
	} {
		got, err := helm.OCIRef(in)
		if want == "" {
			if err == nil {
				t.Errorf("%s: accepted as %s", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
}

// An https:// repository whose server redirects to plain http:// is
// refused before anything is sent there.
func TestFetcherRefusesPlainHTTPForAnHTTPSRepository(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the plain HTTP server: %s (auth %q)", r.URL, r.Header.Get("Authorization"))
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer secure.Close()
	f := helm.Fetcher{RepoURL: secure.URL, Timeout: 10 * time.Second, Addresses: loopback,
		Credentials: helm.Credentials{Username: "u", Password: "p", PassCredentials: true, TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig}}
	if _, err := f.Get(secure.URL+"/index.yaml", 1<<20); !errors.Is(err, helm.ErrInsecure) {
		t.Fatalf("a redirect to http://: %v", err)
	}
}

// depsRepo serves charts dep0..dep<n-1> and returns an app chart depending
// on all of them and the Dependencies resolving them.
func depsRepo(t *testing.T, n int, pad int) (*chart.Chart, helm.Dependencies) {
	t.Helper()
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(repo.Close)
	app := chartOf("app", "1.0.0")
	for i := range n {
		c := chartOf(fmt.Sprintf("dep%d", i), "1.0.0")
		c.Files["files/pad.txt"] = strings.Repeat("p", pad)
		if err := repo.Add(c); err != nil {
			t.Fatal(err)
		}
		app.Dependencies = append(app.Dependencies, &chart.Dependency{Name: c.Name, Version: "1.0.0", Repository: repo.URL()})
	}
	raw, err := repo.Index()
	if err != nil {
		t.Fatal(err)
	}
	index, err := helm.ParseIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := &helm.Fetcher{RepoURL: repo.URL(), Timeout: 10 * time.Second, Addresses: loopback}
	ch, err := testhelm.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	return ch, helm.Dependencies{
		MaxChartBytes: 1 << 20,
		Repository: func(string) (*helm.Repository, error) {
			return &helm.Repository{URL: repo.URL(), Index: index, Fetcher: f}, nil
		},
	}
}

func TestDependenciesAreCounted(t *testing.T) {
	ch, deps := depsRepo(t, helm.MaxDependencies+1, 0)
	err := deps.Build(context.Background(), ch, "")
	if !errors.Is(err, helm.ErrDependencyLimit) || !strings.Contains(err.Error(), "more than 100 dependencies") {
		t.Fatalf("err = %v, want the dependency count limit", err)
	}
}

// Each dependency within the loader's budget, all of them together past
// it: refused.
func TestDependenciesShareOneDecompressedBudget(t *testing.T) {
	helm.SetMaxExtractedSize(64 << 10)
	defer helm.SetMaxExtractedSize(helm.DefaultMaxExtractedSize)
	ch, deps := depsRepo(t, 3, 25<<10)
	err := deps.Build(context.Background(), ch, "")
	if !errors.Is(err, helm.ErrDependencyLimit) || !strings.Contains(err.Error(), "decompress to more than") {
		t.Fatalf("err = %v, want the dependencies' size limit", err)
	}
	ch, deps = depsRepo(t, 2, 25<<10)
	if err := deps.Build(context.Background(), ch, ""); err != nil {
		t.Fatalf("two dependencies within the budget: %v", err)
	}
}

// The build ends, between dependencies, with its context, and says why.
func TestDependenciesEndWithTheContext(t *testing.T) {
	ch, deps := depsRepo(t, 2, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the chart was not built in time"))
	err := deps.Build(ctx, ch, "")
	if err == nil || !strings.Contains(err.Error(), "the chart was not built in time") {
		t.Fatalf("err = %v, want the context's cause", err)
	}
}
