package renderworker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/testhelm"
)

// chartNames are source-controller's words for its chart workers; the
// others are render-controller's.
var chartNames = Names{Work: "packaging the chart", Worker: "chart worker", Workers: "--chart-workers", Memory: "--chart-worker-memory"}

func newChartPool(t *testing.T, opts Options) *Pool {
	opts.Names = chartNames
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = 16 << 20
	}
	return newPool(t, opts)
}

// chartTree writes the charts into a source tree under their folders.
func chartTree(t *testing.T, charts map[string]testhelm.Chart) string {
	t.Helper()
	root := t.TempDir()
	if err := testhelm.WriteCharts(root, charts); err != nil {
		t.Fatal(err)
	}
	return root
}

const chartRepository = "https://charts.example/stable"

func appAndLib() map[string]testhelm.Chart {
	return map[string]testhelm.Chart{
		"charts/app": {Name: "app", Version: "0.1.0",
			Dependencies: []*chart.Dependency{
				{Name: "lib", Version: "0.2.0", Repository: "file://../lib"},
				{Name: "common", Version: "^3", Repository: chartRepository},
			},
			Files: testhelm.Files{
				"values.yaml":       "replicas: 1\n",
				"values-prod.yaml":  "replicas: 3\n",
				"templates/cm.yaml": configMapTemplate,
			}},
		"charts/lib": {Name: "lib", Version: "0.2.0", Files: testhelm.Files{"templates/_helpers.tpl": "{{- define \"lib\" -}}lib{{- end -}}\n"}},
	}
}

func commonArchive(t *testing.T, name string) []byte {
	t.Helper()
	tgz, err := testhelm.Package(testhelm.Chart{Name: name, Version: "3.1.0", Files: testhelm.Files{"templates/cm.yaml": configMapTemplate}})
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// A chart folder with a file:// and a remote dependency plans and
// packages in a worker to the very bytes of an in-process build; the
// package folder is gone afterwards.
func TestAChartPackagesInAWorkerAsInProcess(t *testing.T) {
	g := NewWithT(t)
	p := newChartPool(t, Options{Workers: 1})
	root := chartTree(t, appAndLib())
	src := helmpackage.Source{Root: root, Dir: filepath.Join(root, "charts", "app")}

	plan, err := p.ChartPlan(withTimeout(t, time.Minute), src, ChartOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Name).To(Equal("app"))
	g.Expect(plan.Version).To(Equal("0.1.0"))
	g.Expect(plan.Remote).To(Equal([]helmpackage.Dependency{{Name: "common", Repository: chartRepository, Version: "^3", Chart: "app"}}))

	out := t.TempDir()
	build := helmpackage.Options{
		ValuesFiles: []string{"values.yaml", "values-prod.yaml"},
		Version:     "0.1.0+abc",
		Remote:      map[helmpackage.Dependency][]byte{plan.Remote[0].Key(): commonArchive(t, "common")},
		OutDir:      out,
	}
	res, err := p.ChartPackage(withTimeout(t, time.Minute), src, build, ChartOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Name).To(Equal("app"))
	g.Expect(res.Version).To(Equal("0.1.0+abc"))
	build.OutDir = ""
	want, err := helmpackage.Build(context.Background(), src, build, helmpackage.Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(res.Archive, want.Archive)).To(BeTrue(), "the worker's package differs from the in-process one")
	g.Expect(os.ReadDir(out)).To(BeEmpty())

	// An archive: loaded and checked in the worker.
	_, err = p.ChartPlan(withTimeout(t, time.Minute), helmpackage.Source{Archive: commonArchive(t, "common"), Name: "podinfo"}, ChartOptions{})
	g.Expect(limitReason(err)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(err.Error()).To(ContainSubstring(`served chart "common" for "podinfo"`))
	// The same worker served every request.
	g.Expect(p.Started()).To(Equal(int64(1)))
}

// A values file that costs more than the worker's memory fails with
// LimitExceeded naming the flag; the next chart packages.
func TestAHostileValuesFileIsStoppedAtTheMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	// 256 MiB leaves the next chart room: the limit counts the address
	// space, which a fresh worker's runtime spends more of on a busy
	// machine. 3 MiB of values cost about 400 MiB to parse (testhelm).
	p := newChartPool(t, Options{Workers: 1, Memory: 256 << 20})
	charts := appAndLib()
	charts["charts/app"].Files["values-hostile.yaml"] = testhelm.HostileValues(3 << 20)
	root := chartTree(t, charts)
	src := helmpackage.Source{Root: root, Dir: filepath.Join(root, "charts", "app")}
	remote := map[helmpackage.Dependency][]byte{{Name: "common", Repository: chartRepository, Version: "^3"}: commonArchive(t, "common")}

	_, err := p.ChartPackage(withTimeout(t, time.Minute), src, helmpackage.Options{ValuesFiles: []string{"values-hostile.yaml"}, Remote: remote}, ChartOptions{})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(HavePrefix("packaging the chart passed its memory limit of 256 MiB (--chart-worker-memory); its chart worker was stopped"))

	_, err = p.ChartPackage(withTimeout(t, time.Minute), src, helmpackage.Options{ValuesFiles: []string{"values-prod.yaml"}, Remote: remote}, ChartOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// A package larger than the pool's file-size limit is refused by the
// kernel (RLIMIT_FSIZE) and named; a pool whose workers may write nothing
// packages nothing.
func TestAPackageIsBoundedByTheFileSizeLimit(t *testing.T) {
	g := NewWithT(t)
	p := newChartPool(t, Options{Workers: 1, MaxFileBytes: 8 << 10})
	noise := make([]byte, 32<<10)
	_, err := rand.Read(noise)
	g.Expect(err).NotTo(HaveOccurred())
	big, err := testhelm.Package(testhelm.Chart{Name: "big", Version: "1.0.0", Files: testhelm.Files{"files/noise.txt": hex.EncodeToString(noise)}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.ChartPackage(withTimeout(t, time.Minute), helmpackage.Source{Archive: big}, helmpackage.Options{}, ChartOptions{})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(Equal("the packaged chart is larger than the limit of 8192 bytes"))

	renders := newPool(t, Options{Workers: 1})
	_, err = renders.ChartPackage(withTimeout(t, time.Minute), helmpackage.Source{Archive: big}, helmpackage.Options{}, ChartOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("may write no file")))
}

// A chart request's time limit is named as the caller says.
func TestAChartRequestNamesItsTimeLimit(t *testing.T) {
	g := NewWithT(t)
	p := newChartPool(t, Options{Workers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := p.ChartPlan(ctx, helmpackage.Source{Archive: commonArchive(t, "common")}, ChartOptions{TimeoutName: "spec.timeout of GitRepository charts"})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(Equal("packaging the chart did not finish within its time limit (spec.timeout of GitRepository charts): it waited for a free chart worker (--chart-workers) until then"))
}
