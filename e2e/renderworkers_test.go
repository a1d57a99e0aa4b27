package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/testhelm"
)

// hostileChart is a chart whose one template is tmpl.
func hostileChart(name, tmpl string) testhelm.Chart {
	return testhelm.Chart{Name: name, Version: "1.0.0", Files: testhelm.Files{"templates/hostile.yaml": tmpl}}
}

// A hostile render costs its own tenant, not the others: tenant A's
// HelmReleases render a template that doubles a string until memory runs
// out and one whose nested ranges would run for hours; tenant B's
// Kustomization and HelmRelease, created at the same time, become Ready,
// A's fail with LimitExceeded naming the memory and the time limit,
// render-controller is never restarted, and its memory with its workers',
// read from /proc throughout, stays under the memory limit of its
// Deployment in deploy/.
func TestAHostileChartCostsItsOwnTenantOnly(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	rc := env.Controllers[localenv.RenderController]
	_, restartsBefore, _ := rc.Status()
	limit := renderControllerMemoryLimit(t)
	watch := watchRSS(ctx, rc.Pid())

	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(repo.Close)
	g.Expect(repo.Add(hostileChart("doubling", `{{- $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: big
data:
  size: "{{ len $s }}"
`))).To(Succeed())
	g.Expect(repo.Add(hostileChart("looping", `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`))).To(Succeed())
	g.Expect(repo.Add(helmChart("1.0.0", "blue", false))).To(Succeed())

	release := func(ns, name, chart, target string) {
		g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: helmv2.HelmReleaseSpec{
				Interval:           metav1.Duration{Duration: 10 * time.Minute},
				TargetNamespace:    target,
				ServiceAccountName: "deployer",
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: chart, Version: "1.0.0",
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
				}},
			},
		})).To(Succeed())
	}
	tenantA, tenantB := "e2e-hostile-a", "e2e-hostile-b"
	for _, ns := range []string{tenantA, tenantB, tenantB + "-release"} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	deployer(ctx, g, tenantA, "deployer", "admin", tenantA)
	deployer(ctx, g, tenantB, "deployer", "admin", tenantB+"-release")
	for _, ns := range []string{tenantA, tenantB} {
		g.Expect(env.Client.Create(ctx, &sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
			Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: 10 * time.Minute}},
		})).To(Succeed())
	}
	// Tenant A's two hostile releases, then tenant B's release and its
	// copy of the sample (a Kustomization), at once.
	start := time.Now()
	release(tenantA, "doubling", "doubling", tenantA)
	release(tenantA, "looping", "looping", tenantA)
	release(tenantB, "hello", "hello", tenantB+"-release")
	b := deploy(t, tenantB) // returns once B's Kustomization is Ready
	t.Logf("tenant B's Kustomization Ready after %s", time.Since(start).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		hr := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenantB, Name: "hello"}, hr)).To(Succeed())
		g.Expect(conditions.IsReady(hr)).To(BeTrue(), "%s", helmConditions(hr))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "tenant B's HelmRelease")
	t.Logf("tenant B's HelmRelease Ready after %s", time.Since(start).Round(time.Millisecond))
	g.Expect(b.kustomization().Status.LastAppliedRevision).NotTo(BeEmpty())

	// Tenant A's renders fail, each naming its limit. The loop is stopped
	// by its deadline or by its CPU limit, whichever comes first: the Go
	// runtime's collector runs beside the template on the second core,
	// so the worker can use its 30 s of CPU before 30 s have passed.
	for name, want := range map[string]*regexp.Regexp{
		"doubling": regexp.MustCompile(`rendering passed its memory limit of 768 MiB \(--render-worker-memory\)`),
		"looping":  regexp.MustCompile(`rendering (did not finish within its time limit|used more CPU time than its limit) of 30s \(--render-timeout\)`),
	} {
		g.Eventually(func(g Gomega) {
			hr := &helmv2.HelmRelease{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenantA, Name: name}, hr)).To(Succeed())
			c := conditions.Get(hr, kustomizev1.RenderedCondition)
			g.Expect(c).NotTo(BeNil(), "%s", helmConditions(hr))
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(meta.LimitExceededReason))
			g.Expect(c.Message).To(MatchRegexp(want.String()))
		}).WithTimeout(2*timeout).WithPolling(poll).Should(Succeed(), "tenant A's HelmRelease %s", name)
	}

	running, restarts, lastExit := rc.Status()
	g.Expect(running).To(BeTrue())
	g.Expect(restarts).To(Equal(restartsBefore), "render-controller restarted: %s", lastExit)
	peak, samples := watch()
	g.Expect(samples).To(BeNumerically(">", 10), "memory samples of render-controller")
	t.Logf("render-controller and its workers: peak %d MiB resident over %d samples, limit %d MiB", peak>>20, samples, limit>>20)
	g.Expect(peak).To(BeNumerically("<", limit), "render-controller and its workers passed the Deployment's memory limit")
}

// renderControllerMemoryLimit is the memory limit of render-controller's
// container in deploy/.
func renderControllerMemoryLimit(t *testing.T) int64 {
	t.Helper()
	root, err := localenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "render-controller", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			return q.Value()
		}
	}
	t.Fatal("deploy/render-controller/deployment.yaml sets no memory limit")
	return 0
}

// watchRSS samples the resident memory of pid and its children (from
// /proc) until ctx ends or the returned function is called, which returns
// the largest sum seen and how many samples were taken.
func watchRSS(ctx context.Context, pid int) func() (peak int64, samples int) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		max     int64
		n       int
		stopped = make(chan struct{})
	)
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			total := rss(pid)
			children, _ := localenv.ChildPids(pid)
			for _, child := range children {
				total += rss(child)
			}
			mu.Lock()
			max, n = maxOf(max, total), n+1
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int) {
		cancel()
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return max, n
	}
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// rss is VmRSS of pid in bytes, 0 when it is gone.
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			q, err := resource.ParseQuantity(f[1] + "Ki")
			if err != nil {
				return 0
			}
			return q.Value()
		}
	}
	return 0
}
