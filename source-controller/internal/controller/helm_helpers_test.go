package controller

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// helmObject is a HelmRepository, a HelmChart, an OCIRepository or a
// Bucket.
type helmObject interface {
	client.Object
	GetConditions() []metav1.Condition
}

func newHelmRepository(ns, name, url string, secret *meta.LocalObjectReference) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.HelmRepositorySpec{
			URL:       url,
			SecretRef: secret,
			Interval:  metav1.Duration{Duration: time.Hour},
			Timeout:   &metav1.Duration{Duration: 20 * time.Second},
		},
	}
}

func newHelmChart(ns, name, chartName, version, kind, source string) *sourcev1.HelmChart {
	return &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.HelmChartSpec{
			Chart:     chartName,
			Version:   version,
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: kind, Name: source},
			Interval:  metav1.Duration{Duration: time.Hour},
		},
	}
}

func conditionOf(obj helmObject, t string) *metav1.Condition {
	for _, c := range obj.GetConditions() {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

func generationObserved(obj client.Object) int64 {
	switch o := obj.(type) {
	case *sourcev1.HelmRepository:
		return o.Status.ObservedGeneration
	case *sourcev1.HelmChart:
		return o.Status.ObservedGeneration
	case *sourcev1.OCIRepository:
		return o.Status.ObservedGeneration
	case *sourcev1.Bucket:
		return o.Status.ObservedGeneration
	}
	return -1
}

func artifactOf(obj client.Object) *meta.Artifact {
	if h, ok := obj.(meta.ArtifactHolder); ok {
		return h.GetArtifact()
	}
	return nil
}

// waitHelmReady waits for Ready=True on the current generation, with an
// artifact of revision unless revision is "" (an OCI HelmRepository has
// none), and fills obj.
func waitHelmReady(t *testing.T, obj helmObject, revision string) {
	t.Helper()
	waitHelmCondition(t, obj, func(g Gomega, ready *metav1.Condition) {
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(generationObserved(obj)).To(Equal(obj.GetGeneration()))
		if revision != "" {
			g.Expect(artifactOf(obj)).NotTo(BeNil())
			g.Expect(artifactOf(obj).Revision).To(Equal(revision))
		}
	})
}

// waitHelmFailed waits for Ready=False with reason on the current
// generation and fills obj.
func waitHelmFailed(t *testing.T, obj helmObject, reason string) {
	t.Helper()
	waitHelmCondition(t, obj, func(g Gomega, ready *metav1.Condition) {
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
		g.Expect(ready.ObservedGeneration).To(Equal(obj.GetGeneration()))
	})
}

// waitHelmCondition waits until check passes on the Ready condition of
// obj as stored, and fills obj.
func waitHelmCondition(t *testing.T, obj helmObject, check func(g Gomega, ready *metav1.Condition)) {
	t.Helper()
	key := keyOf(obj)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
		ready := conditionOf(obj, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		check(g, ready)
	}, timeout, poll).Should(Succeed())
}

// expectLeftAlone waits until the reconciler saw the suspended obj (it
// has the finalizer), then checks that no artifact appears for a second.
func expectLeftAlone(t *testing.T, obj helmObject) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), keyOf(obj), obj)).To(Succeed())
		g.Expect(obj.GetFinalizers()).To(ContainElement(Finalizer))
	}, timeout, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), keyOf(obj), obj)).To(Succeed())
		g.Expect(artifactOf(obj)).To(BeNil())
	}, "1s", poll).Should(Succeed())
}

// newTestRepo serves charts from a new chart repository, closed when the
// test ends.
func newTestRepo(t *testing.T, charts ...testhelm.Chart) *testhelm.Repo {
	t.Helper()
	g := NewWithT(t)
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(repo.Close)
	for _, c := range charts {
		g.Expect(repo.Add(c)).To(Succeed())
	}
	return repo
}

// requestHelmReconcile sets the requestedAt annotation and waits until
// the controller handled it.
func requestHelmReconcile(t *testing.T, obj helmObject, token string) {
	t.Helper()
	g := NewWithT(t)
	key := keyOf(obj)
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[meta.ReconcileRequestAnnotation] = token
	obj.SetAnnotations(ann)
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
		g.Expect(obj.(meta.Requestable).GetLastHandledReconcileRequest()).To(Equal(token))
	}, timeout, poll).Should(Succeed())
}

// loadChart downloads a chart artifact, checks its digest and loads it
// with the SDK.
func loadChart(t *testing.T, a *meta.Artifact) (*chart.Chart, []byte) {
	t.Helper()
	tgz := download(t, a)
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	return ch, tgz
}

// configMapChart is a chart of one ConfigMap template at a version.
func configMapChart(name, version string) testhelm.Chart {
	return testhelm.Chart{Name: name, Version: version, Files: testhelm.Files{
		"values.yaml":       "message: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message }}\n",
	}}
}

// chartArchive packages a test chart as a chart repository serves it.
func chartArchive(t *testing.T, c testhelm.Chart) []byte {
	t.Helper()
	tgz, err := testhelm.Package(c)
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// inProcessDigest builds the chart at dir of the source files in this
// process, as source-controller did before chart workers, and returns
// the package's digest.
func inProcessDigest(t *testing.T, files testhelm.Files, dir string, remote map[helmpackage.Dependency][]byte, valuesFiles []string, version string) string {
	t.Helper()
	root := t.TempDir()
	if err := testhelm.WriteFiles(root, files); err != nil {
		t.Fatal(err)
	}
	res, err := helmpackage.Build(context.Background(), helmpackage.Source{Root: root, Dir: filepath.Join(root, filepath.FromSlash(dir))},
		helmpackage.Options{ValuesFiles: valuesFiles, Version: version, Remote: remote}, helmpackage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return helm.Digest(res.Archive)
}
