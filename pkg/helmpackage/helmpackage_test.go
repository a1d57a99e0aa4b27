package helmpackage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/testhelm"
)

func chartOf(name, version string) testhelm.Chart {
	return testhelm.Chart{Name: name, Version: version, Files: testhelm.Files{
		"values.yaml":       "a: 1\n",
		"templates/cm.yaml": "kind: ConfigMap\n",
		"files/z.txt":       "z",
		"files/a.txt":       "a",
	}}
}

func archiveOf(t *testing.T, c testhelm.Chart) []byte {
	t.Helper()
	tgz, err := testhelm.Package(c)
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// writeTree writes the charts into a new source tree, each under its
// folder, and returns the tree.
func writeTree(t *testing.T, charts map[string]testhelm.Chart) string {
	t.Helper()
	root := t.TempDir()
	if err := testhelm.WriteCharts(root, charts); err != nil {
		t.Fatal(err)
	}
	return root
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestPackageIsDeterministicWhateverTheFileOrder(t *testing.T) {
	tgz := archiveOf(t, chartOf("app", "1.0.0"))
	one, err := helmpackage.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	two, err := helmpackage.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	// The same chart with its files and times in another order.
	two.Files[0], two.Files[1] = two.Files[1], two.Files[0]
	two.ModTime = time.Now()
	a, err := helmpackage.Package(one, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := helmpackage.Package(two, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same chart packaged to different bytes")
	}
	if _, err := helmpackage.LoadArchive(a); err != nil {
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
	used, err := helmpackage.MergeValuesFiles(ch, []string{"values.yaml", "one.yaml", "two.yaml"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(used, []string{"values.yaml", "one.yaml", "two.yaml"}) {
		t.Fatalf("merged files %v", used)
	}
	tgz, err := helmpackage.Package(ch, "")
	if err != nil {
		t.Fatal(err)
	}
	back, err := helmpackage.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	m := back.Values["m"].(map[string]any)
	if back.Values["a"] != float64(1) || m["x"] != float64(2) || m["w"] != float64(3) || back.Values["b"] != true {
		t.Fatalf("merged values %v", back.Values)
	}
	if _, err := helmpackage.MergeValuesFiles(ch, []string{"missing.yaml"}, false); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("a missing values file: %v", err)
	}
	// With ignoreMissingValuesFiles a missing file is skipped and not
	// named among those merged; a broken one still fails.
	used, err = helmpackage.MergeValuesFiles(ch, []string{"missing.yaml", "one.yaml"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(used, []string{"one.yaml"}) {
		t.Fatalf("merged files %v, want only one.yaml", used)
	}
	if _, err := helmpackage.MergeValuesFiles(ch, []string{"bad.yaml"}, true); err == nil {
		t.Fatal("a values file that is not a map was merged")
	}
}

// goldenRepository is the remote dependencies' repository of the golden
// chart: a fixed URL, since Chart.yaml, and so the package, names it.
const goldenRepository = "https://charts.example/stable"

// goldenTree is a chart with a file:// dependency (lib) and a remote one
// (common ^3) that lib depends on too.
func goldenTree(t *testing.T) (root, dir string) {
	app := testhelm.Chart{Name: "app", Version: "0.1.0",
		Dependencies: []*chart.Dependency{
			{Name: "lib", Version: "0.2.0", Repository: "file://../lib"},
			{Name: "common", Version: "^3", Repository: goldenRepository},
		},
		Files: testhelm.Files{
			"values.yaml":       "replicas: 1\nimage:\n  tag: v1\n  pullPolicy: IfNotPresent\n",
			"values-prod.yaml":  "replicas: 3\nimage:\n  tag: v2\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		}}
	lib := testhelm.Chart{Name: "lib", Version: "0.2.0",
		Dependencies: []*chart.Dependency{{Name: "common", Version: "^3", Repository: goldenRepository}},
		Files:        testhelm.Files{"templates/_helpers.tpl": "{{- define \"lib.name\" -}}lib{{- end -}}\n"}}
	root = writeTree(t, map[string]testhelm.Chart{"charts/app": app, "charts/lib": lib})
	return root, filepath.Join(root, "charts", "app")
}

// goldenDigest is what source-controller packaged the golden chart to
// when it built charts in its own process (helm.sh/helm/v4 v4.3.1, Go
// 1.25's compress/gzip): the move into a worker must not change a byte,
// or every HelmRelease of every chart would render again. Only a Helm SDK
// or gzip that writes other bytes may change it.
const goldenDigest = "sha256:8f6688b33d6bce0d6653164186d5a8ccd853220d26083e74bb74db77ec36521a"

// A plan lists the remote dependency once, though two charts ask for it;
// the build with its archive packages to the same bytes as before.
func TestBuildPackagesTheSameBytesAsBefore(t *testing.T) {
	root, dir := goldenTree(t)
	src := helmpackage.Source{Root: root, Dir: dir}
	plan, err := helmpackage.MakePlan(context.Background(), src, helmpackage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	common := helmpackage.Dependency{Name: "common", Repository: goldenRepository, Version: "^3"}
	if plan.Name != "app" || plan.Version != "0.1.0" || len(plan.Remote) != 1 || plan.Remote[0].Key() != common {
		t.Fatalf("plan %+v", plan)
	}
	res, err := helmpackage.Build(context.Background(), src, helmpackage.Options{
		ValuesFiles: []string{"values.yaml", "values-prod.yaml"},
		Version:     "0.1.0+0123456789ab",
		Remote:      map[helmpackage.Dependency][]byte{common: archiveOf(t, chartOf("common", "3.1.0"))},
		OutDir:      t.TempDir(),
	}, helmpackage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != "app" || res.Version != "0.1.0+0123456789ab" {
		t.Fatalf("packaged %s %s", res.Name, res.Version)
	}
	if got := digest(res.Archive); got != goldenDigest {
		t.Fatalf("packaged to %s, want %s", got, goldenDigest)
	}

	// Without the archive of a remote dependency, nothing is built.
	_, err = helmpackage.Build(context.Background(), src, helmpackage.Options{}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "was not pulled") {
		t.Fatalf("a build without the remote dependency: %v", err)
	}
	// A repository serving another chart under the name.
	_, err = helmpackage.Build(context.Background(), src, helmpackage.Options{
		Remote: map[helmpackage.Dependency][]byte{common: archiveOf(t, chartOf("other", "3.1.0"))},
	}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), `served chart "other" for "common"`) {
		t.Fatalf("another chart under the name: %v", err)
	}
}

// Chart.lock pins a dependency's version over Chart.yaml's range; a
// file:// dependency may not leave the source, nor may an archive have
// one; an archive must be the chart asked for.
func TestPlan(t *testing.T) {
	const url = "https://charts.example/stable"
	app := chartOf("app", "1.0.0")
	app.Dependencies = []*chart.Dependency{{Name: "common", Version: "^1", Repository: url}}
	app.Files["Chart.lock"] = "dependencies:\n- name: common\n  version: 1.0.0\n  repository: " + url + "\ndigest: sha256:0\ngenerated: \"2020-01-01T00:00:00Z\"\n"
	plan, err := helmpackage.MakePlan(context.Background(), helmpackage.Source{Archive: archiveOf(t, app), Name: "app"}, helmpackage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Remote) != 1 || plan.Remote[0] != (helmpackage.Dependency{Name: "common", Repository: url, Version: "1.0.0", Chart: "app"}) {
		t.Fatalf("remote %+v", plan.Remote)
	}

	// Without the lock, the range.
	delete(app.Files, "Chart.lock")
	plan, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Archive: archiveOf(t, app)}, helmpackage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Remote[0].Version != "^1" {
		t.Fatalf("remote %+v", plan.Remote)
	}

	// An archive of another chart.
	_, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Archive: archiveOf(t, app), Name: "podinfo"}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), `served chart "app" for "podinfo"`) {
		t.Fatalf("an archive of another chart: %v", err)
	}

	// A local alias, and file:// out of the source or of an archive.
	app.Dependencies = []*chart.Dependency{{Name: "common", Version: "^1", Repository: "@stable"}}
	_, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Archive: archiveOf(t, app)}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "local Helm repository alias") {
		t.Fatalf("an alias: %v", err)
	}
	app.Dependencies = []*chart.Dependency{{Name: "lib", Version: "1.0.0", Repository: "file://../../lib"}}
	_, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Archive: archiveOf(t, app)}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "packaged chart cannot be resolved") {
		t.Fatalf("a file:// dependency of an archive: %v", err)
	}
	outside := writeTree(t, map[string]testhelm.Chart{"lib": chartOf("lib", "1.0.0")})
	root := writeTree(t, map[string]testhelm.Chart{"app": app})
	rel, err := filepath.Rel(filepath.Join(root, "app"), filepath.Join(outside, "lib"))
	if err != nil {
		t.Fatal(err)
	}
	app.Dependencies[0].Repository = "file://" + rel
	root = writeTree(t, map[string]testhelm.Chart{"app": app})
	_, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Root: root, Dir: filepath.Join(root, "app")}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "leaves the source") {
		t.Fatalf("a file:// dependency outside the source: %v", err)
	}
	// A symbolic link out of the source, as the chart's folder.
	if err := os.Symlink(filepath.Join(outside, "lib"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	_, err = helmpackage.MakePlan(context.Background(), helmpackage.Source{Root: root, Dir: filepath.Join(root, "link")}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "leaves the source") {
		t.Fatalf("a chart folder linked outside the source: %v", err)
	}
}

// depsApp returns an app chart archive depending on dep0..dep<n-1> and
// the archives of those, each padded with pad bytes.
func depsApp(t *testing.T, n int, pad int) (helmpackage.Source, map[helmpackage.Dependency][]byte) {
	t.Helper()
	const url = "https://charts.example/stable"
	app := chartOf("app", "1.0.0")
	remote := map[helmpackage.Dependency][]byte{}
	for i := range n {
		c := chartOf(fmt.Sprintf("dep%d", i), "1.0.0")
		c.Files["files/pad.txt"] = strings.Repeat("p", pad)
		d := &chart.Dependency{Name: c.Name, Version: "1.0.0", Repository: url}
		app.Dependencies = append(app.Dependencies, d)
		remote[helmpackage.Dependency{Name: d.Name, Repository: url, Version: d.Version}] = archiveOf(t, c)
	}
	return helmpackage.Source{Archive: archiveOf(t, app)}, remote
}

// Past MaxDependencies, the plan fails: nothing is downloaded.
func TestDependenciesAreCounted(t *testing.T) {
	src, _ := depsApp(t, helmpackage.MaxDependencies+1, 0)
	_, err := helmpackage.MakePlan(context.Background(), src, helmpackage.Limits{})
	if !errors.Is(err, helmpackage.ErrDependencyLimit) || !strings.Contains(err.Error(), "more than 100 dependencies") {
		t.Fatalf("err = %v, want the dependency count limit", err)
	}
}

// Each dependency within the loader's budget, all of them together past
// it: refused.
func TestDependenciesShareOneDecompressedBudget(t *testing.T) {
	limits := helmpackage.Limits{MaxExtractedBytes: 64 << 10}
	src, remote := depsApp(t, 3, 25<<10)
	_, err := helmpackage.Build(context.Background(), src, helmpackage.Options{Remote: remote}, limits)
	if !errors.Is(err, helmpackage.ErrDependencyLimit) || !strings.Contains(err.Error(), "decompress to more than") {
		t.Fatalf("err = %v, want the dependencies' size limit", err)
	}
	src, remote = depsApp(t, 2, 25<<10)
	if _, err := helmpackage.Build(context.Background(), src, helmpackage.Options{Remote: remote}, limits); err != nil {
		t.Fatalf("two dependencies within the budget: %v", err)
	}
}

// The build ends, between dependencies, with its context, and says why.
func TestDependenciesEndWithTheContext(t *testing.T) {
	src, remote := depsApp(t, 2, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the chart was not built in time"))
	_, err := helmpackage.Build(ctx, src, helmpackage.Options{Remote: remote}, helmpackage.Limits{})
	if err == nil || !strings.Contains(err.Error(), "the chart was not built in time") {
		t.Fatalf("err = %v, want the context's cause", err)
	}
}
