package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/testgit"
	"plumb.dev/pkg/testhelm"
)

// A chart pushed to an in-process OCI registry by the SDK's registry
// client: the tags are listed, the range resolved, the chart pulled.
func TestHelmChartFromOCIRegistry(t *testing.T) {
	g := NewWithT(t)
	reg, err := testhelm.NewRegistry(testhelm.RegistryOptions{Username: "oci", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer reg.Close()
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0"} {
		_, err := reg.Push(configMapChart("podinfo", v))
		g.Expect(err).NotTo(HaveOccurred())
	}
	ns := namespace(t)
	credentials(t, ns, "oci-auth", map[string]string{"username": "oci", "password": "s3cret"})
	hr := newHelmRepository(ns, "oci", reg.URL(), &meta.LocalObjectReference{Name: "oci-auth"})
	hr.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	hr.Spec.Insecure = true
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmReady(t, hr, "")

	hc := newHelmChart(ns, "podinfo", "podinfo", "^1", sourcev1.HelmRepositoryKind, "oci")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "1.2.0")
	ch, _ := loadChart(t, hc.Status.Artifact)
	g.Expect(ch.Name()).To(Equal("podinfo"))
	g.Expect(ch.Metadata.Version).To(Equal("1.2.0"))
	g.Expect(ch.Templates).To(HaveLen(1))

	// A new version in range, found at the next reconcile.
	_, err = reg.Push(configMapChart("podinfo", "1.3.0"))
	g.Expect(err).NotTo(HaveOccurred())
	requestHelmReconcile(t, hc, "new-tag")
	waitHelmReady(t, hc, "1.3.0")
	evs := streamEvents(t, events.Subject(sourcev1.HelmChartKind, ns, "podinfo"), 2)
	g.Expect(evs[0].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[0].Revision).To(Equal("1.2.0"))
	g.Expect(evs[1].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[1].Revision).To(Equal("1.3.0"))
	g.Expect(evs[1].Metadata).To(HaveKeyWithValue("digest", hc.Status.Artifact.Digest))

	// Without credentials the registry refuses.
	anon := newHelmRepository(ns, "anonymous", reg.URL(), nil)
	anon.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	anon.Spec.Insecure = true
	g.Expect(k8s.Create(context.Background(), anon)).To(Succeed())
	waitHelmReady(t, anon, "")
	refused := newHelmChart(ns, "refused", "podinfo", "^1", sourcev1.HelmRepositoryKind, "anonymous")
	g.Expect(k8s.Create(context.Background(), refused)).To(Succeed())
	waitHelmFailed(t, refused, sourcev1.AuthenticationFailedReason)
	g.Expect(refused.Status.Artifact).To(BeNil())
	g.Expect(conditionOf(refused, sourcev1.FetchFailedCondition).Status).To(Equal(metav1.ConditionTrue))
}

// A chart in a Git repository: loaded from its path in the GitRepository's
// artifact, its file:// dependency and a dependency from an HTTP
// HelmRepository of the namespace resolved, valuesFiles merged in order
// over values.yaml; the same chart built twice has the same digest; a new
// commit without a version bump makes no new artifact under ChartVersion,
// and one per commit under Revision.
func TestHelmChartFromGitRepository(t *testing.T) {
	g := NewWithT(t)
	helmRepo, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer helmRepo.Close()
	g.Expect(helmRepo.Add(configMapChart("common", "3.1.0"))).To(Succeed())
	g.Expect(helmRepo.Add(configMapChart("common", "4.0.0"))).To(Succeed())

	app := testhelm.Chart{Name: "app", Version: "0.1.0",
		Dependencies: []*chart.Dependency{
			{Name: "lib", Version: "0.2.0", Repository: "file://../lib"},
			{Name: "common", Version: "^3", Repository: helmRepo.URL()},
		},
		Files: testhelm.Files{
			"values.yaml":       "replicas: 1\nimage:\n  tag: v1\n  pullPolicy: IfNotPresent\n",
			"values-prod.yaml":  "replicas: 3\nimage:\n  tag: v2\n",
			"values-extra.yaml": "image:\n  tag: v3\nextra: true\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		}}
	lib := testhelm.Chart{Name: "lib", Version: "0.2.0", Files: testhelm.Files{
		"templates/_helpers.tpl": "{{- define \"lib.name\" -}}lib{{- end -}}\n",
	}}
	files, err := testhelm.ChartFiles(app, "charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	libFiles, err := testhelm.ChartFiles(lib, "charts/lib")
	g.Expect(err).NotTo(HaveOccurred())
	for k, v := range libFiles {
		files[k] = v
	}
	repo := repoFor(t)
	c1, err := repo.Commit("main", "chart", testgit.Files(files))
	g.Expect(err).NotTo(HaveOccurred())

	ns := namespace(t)
	credentials(t, ns, "helm-auth", map[string]string{"username": "helm", "password": "s3cret"})
	hr := newHelmRepository(ns, "common", helmRepo.URL(), &meta.LocalObjectReference{Name: "helm-auth"})
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	gr := newGitRepository(ns, "charts", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), gr)).To(Succeed())
	waitReady(t, keyOf(gr), "main@sha1:"+c1)

	hc := newHelmChart(ns, "app", "charts/app", "", sourcev1.GitRepositoryKind, "charts")
	hc.Spec.ValuesFiles = []string{"values.yaml", "values-prod.yaml", "values-extra.yaml"}
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "0.1.0")
	g.Expect(hc.Status.ObservedChartName).To(Equal("app"))
	g.Expect(hc.Status.ObservedSourceArtifactRevision).To(Equal("main@sha1:" + c1))
	g.Expect(hc.Status.ObservedValuesFiles).To(Equal(hc.Spec.ValuesFiles))
	ch, _ := loadChart(t, hc.Status.Artifact)
	deps := map[string]string{}
	for _, d := range ch.Dependencies() {
		deps[d.Name()] = d.Metadata.Version
	}
	g.Expect(deps).To(Equal(map[string]string{"lib": "0.2.0", "common": "3.1.0"}))
	g.Expect(ch.Values).To(Equal(map[string]any{
		"replicas": float64(3),
		"image":    map[string]any{"tag": "v3", "pullPolicy": "IfNotPresent"},
		"extra":    true,
	}))

	// The same chart built by another HelmChart: the same bytes.
	twin := newHelmChart(ns, "twin", "charts/app", "", sourcev1.GitRepositoryKind, "charts")
	twin.Spec.ValuesFiles = hc.Spec.ValuesFiles
	g.Expect(k8s.Create(context.Background(), twin)).To(Succeed())
	waitHelmReady(t, twin, "0.1.0")
	g.Expect(twin.Status.Artifact.Digest).To(Equal(hc.Status.Artifact.Digest))
	// And the bytes source-controller packaged in its own process before
	// chart workers did: pkg/helmpackage's in-process build of the same
	// tree and dependency (its golden test pins those bytes).
	g.Expect(hc.Status.Artifact.Digest).To(Equal(inProcessDigest(t, files, "charts/app",
		map[helmpackage.Dependency][]byte{{Name: "common", Repository: helmRepo.URL(), Version: "^3"}: chartArchive(t, configMapChart("common", "3.1.0"))},
		hc.Spec.ValuesFiles, "0.1.0")))

	// Under Revision, the version carries the commit.
	rev := newHelmChart(ns, "by-revision", "charts/app", "", sourcev1.GitRepositoryKind, "charts")
	rev.Spec.ReconcileStrategy = sourcev1.ReconcileStrategyRevision
	g.Expect(k8s.Create(context.Background(), rev)).To(Succeed())
	waitHelmReady(t, rev, "0.1.0+"+c1[:12])
	revChart, _ := loadChart(t, rev.Status.Artifact)
	g.Expect(revChart.Metadata.Version).To(Equal("0.1.0+" + c1[:12]))

	// A new commit changing a template but not the version: the
	// GitRepository's new artifact brings both charts back; ChartVersion
	// keeps its artifact, Revision makes a new one.
	first := hc.Status.Artifact.DeepCopy()
	changed := testgit.Files{"charts/app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-changed\n"}
	c2, err := repo.Commit("main", "template", changed)
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, keyOf(gr), "c2")
	waitReady(t, keyOf(gr), "main@sha1:"+c2)
	waitHelmReady(t, rev, "0.1.0+"+c2[:12])
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), keyOf(hc), hc)).To(Succeed())
		g.Expect(hc.Status.ObservedSourceArtifactRevision).To(Equal("main@sha1:" + c2))
	}, timeout, poll).Should(Succeed())
	g.Expect(hc.Status.Artifact).To(Equal(first))

	// A version bump: a new artifact under ChartVersion too.
	bumped := app
	bumped.Version = "0.2.0"
	bumpedFiles, err := testhelm.ChartFiles(bumped, "charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	c3, err := repo.Commit("main", "bump", testgit.Files{"charts/app/Chart.yaml": bumpedFiles["charts/app/Chart.yaml"]})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, keyOf(gr), "c3")
	waitReady(t, keyOf(gr), "main@sha1:"+c3)
	waitHelmReady(t, hc, "0.2.0")
	g.Expect(hc.Status.Artifact.Digest).NotTo(Equal(first.Digest))

	// A values file that is not in the chart: BuildFailed, the last
	// artifact kept.
	good := hc.Status.Artifact.DeepCopy()
	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.ValuesFiles = []string{"values-missing.yaml"}
	g.Expect(k8s.Patch(context.Background(), hc, patch)).To(Succeed())
	waitHelmFailed(t, hc, sourcev1.ChartPackageFailedReason)
	g.Expect(conditionOf(hc, sourcev1.BuildFailedCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(conditionOf(hc, meta.ReadyCondition).Message).To(ContainSubstring("values-missing.yaml"))
	g.Expect(hc.Status.Artifact).To(Equal(good))

	// Under ignoreMissingValuesFiles the missing file is skipped: the
	// chart builds with the others, and observedValuesFiles shows which.
	patch = client.MergeFrom(hc.DeepCopy())
	hc.Spec.ValuesFiles = []string{"values-missing.yaml", "values-prod.yaml"}
	hc.Spec.IgnoreMissingValuesFiles = true
	g.Expect(k8s.Patch(context.Background(), hc, patch)).To(Succeed())
	waitHelmReady(t, hc, "0.2.0")
	g.Expect(hc.Status.ObservedValuesFiles).To(Equal([]string{"values-prod.yaml"}))
	g.Expect(conditionOf(hc, sourcev1.BuildFailedCondition)).To(BeNil())
	skipped, _ := loadChart(t, hc.Status.Artifact)
	g.Expect(skipped.Values).To(Equal(map[string]any{
		"replicas": float64(3),
		"image":    map[string]any{"tag": "v2", "pullPolicy": "IfNotPresent"},
	}))

	// A path leaving the source stalls.
	escape := newHelmChart(ns, "escape", "../../etc", "", sourcev1.GitRepositoryKind, "charts")
	g.Expect(k8s.Create(context.Background(), escape)).To(Succeed())
	waitHelmFailed(t, escape, meta.InvalidSpecReason)
}

// Charts listed in an index on another host get the credentials only with
// passCredentials.
func TestHelmChartPassCredentials(t *testing.T) {
	g := NewWithT(t)
	charts, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer charts.Close()
	index, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret", BaseURL: charts.URL()})
	g.Expect(err).NotTo(HaveOccurred())
	defer index.Close()
	for _, r := range []*testhelm.Repo{charts, index} {
		g.Expect(r.Add(configMapChart("podinfo", "1.0.0"))).To(Succeed())
	}
	ns := namespace(t)
	credentials(t, ns, "helm-auth", map[string]string{"username": "helm", "password": "s3cret"})
	hr := newHelmRepository(ns, "index", index.URL(), &meta.LocalObjectReference{Name: "helm-auth"})
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	raw, err := index.Index()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(ContainSubstring(charts.URL() + "/podinfo-1.0.0.tgz"))
	waitHelmReady(t, hr, "")

	hc := newHelmChart(ns, "podinfo", "podinfo", "", sourcev1.HelmRepositoryKind, "index")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmFailed(t, hc, sourcev1.AuthenticationFailedReason)
	g.Expect(charts.Requests("/podinfo-1.0.0.tgz")).To(BeNumerically(">", 0))

	patch := client.MergeFrom(hr.DeepCopy())
	hr.Spec.PassCredentials = true
	g.Expect(k8s.Patch(context.Background(), hr, patch)).To(Succeed())
	requestHelmReconcile(t, hc, "pass")
	waitHelmReady(t, hc, "1.0.0")
}

// A chart larger than --helm-chart-max-size is refused; a HelmChart whose
// source does not exist waits for it.
func TestHelmChartBounds(t *testing.T) {
	g := NewWithT(t)
	repo := newTestRepo(t)
	noise := make([]byte, maxChartSize)
	_, err := rand.Read(noise)
	g.Expect(err).NotTo(HaveOccurred())
	big := configMapChart("big", "1.0.0")
	big.Files["files/noise.txt"] = hex.EncodeToString(noise)
	g.Expect(repo.Add(big)).To(Succeed())
	ns := namespace(t)
	hr := newHelmRepository(ns, "big", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmReady(t, hr, "")

	hc := newHelmChart(ns, "big", "big", "", sourcev1.HelmRepositoryKind, "big")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmFailed(t, hc, sourcev1.ChartPullFailedReason)
	g.Expect(conditionOf(hc, meta.ReadyCondition).Message).To(ContainSubstring("larger than the limit"))
	g.Expect(hc.Status.Artifact).To(BeNil())

	// No such chart in the index.
	none := newHelmChart(ns, "none", "nothing", "", sourcev1.HelmRepositoryKind, "big")
	g.Expect(k8s.Create(context.Background(), none)).To(Succeed())
	waitHelmFailed(t, none, sourcev1.ChartPullFailedReason)
	g.Expect(conditionOf(none, meta.ReadyCondition).Message).To(ContainSubstring("not in the repository index"))

	// An invalid range stalls.
	invalid := newHelmChart(ns, "invalid", "big", "not a range", sourcev1.HelmRepositoryKind, "big")
	g.Expect(k8s.Create(context.Background(), invalid)).To(Succeed())
	waitHelmFailed(t, invalid, meta.InvalidSpecReason)
	g.Expect(conditionOf(invalid, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))

	// A source of another API group stalls.
	foreign := newHelmChart(ns, "foreign", "big", "", sourcev1.HelmRepositoryKind, "big")
	foreign.Spec.SourceRef.APIVersion = "source.toolkit.fluxcd.io/v1"
	g.Expect(k8s.Create(context.Background(), foreign)).To(Succeed())
	waitHelmFailed(t, foreign, meta.InvalidSpecReason)

	// A missing source: a wait, until it appears.
	g.Expect(repo.Add(configMapChart("small", "1.0.0"))).To(Succeed())
	waiting := newHelmChart(ns, "waiting", "small", "", sourcev1.HelmRepositoryKind, "later")
	g.Expect(k8s.Create(context.Background(), waiting)).To(Succeed())
	waitHelmFailed(t, waiting, meta.DependencyNotReadyReason)
	g.Expect(strings.ToLower(conditionOf(waiting, meta.ReadyCondition).Message)).To(ContainSubstring("not found"))
	later := newHelmRepository(ns, "later", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), later)).To(Succeed())
	waitHelmReady(t, waiting, "1.0.0")
}

// A suspended HelmChart is left alone until resumed.
func TestHelmChartSuspend(t *testing.T) {
	g := NewWithT(t)
	repo := newTestRepo(t, configMapChart("podinfo", "1.0.0"))
	ns := namespace(t)
	hr := newHelmRepository(ns, "podinfo", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmReady(t, hr, "")
	hc := newHelmChart(ns, "podinfo", "podinfo", "", sourcev1.HelmRepositoryKind, "podinfo")
	hc.Spec.Suspend = true
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	expectLeftAlone(t, hc)
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(BeZero())

	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.Suspend = false
	g.Expect(k8s.Patch(context.Background(), hc, patch)).To(Succeed())
	waitHelmReady(t, hc, "1.0.0")
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(Equal(1))

	// Deleting it removes its artifacts.
	a := hc.Status.Artifact.DeepCopy()
	g.Expect(k8s.Delete(context.Background(), hc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), keyOf(hc), &sourcev1.HelmChart{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}, timeout, poll).Should(Succeed())
	g.Expect(storage.Exists(a)).To(BeFalse())
}

// A values file crafted to cost more memory than --chart-worker-memory
// stops its chart worker: the HelmChart is Ready=False with
// LimitExceeded naming the flag, one event says so, and the last artifact
// stays; source-controller goes on packaging other charts.
func TestHelmChartHostileValuesFileStopsOnlyItsWorker(t *testing.T) {
	g := NewWithT(t)
	app := configMapChart("app", "1.0.0")
	// 700 KiB, within the repository's 1 MiB limit; listed twice, as a
	// HelmChart may, it is parsed twice while the first parse is kept.
	app.Files["values-hostile.yaml"] = testhelm.HostileValues(700 << 10)
	files, err := testhelm.ChartFiles(app, "charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	repo := repoFor(t)
	c1, err := repo.Commit("main", "chart", testgit.Files(files))
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	gr := newGitRepository(ns, "charts", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), gr)).To(Succeed())
	waitReady(t, keyOf(gr), "main@sha1:"+c1)

	hc := newHelmChart(ns, "app", "charts/app", "", sourcev1.GitRepositoryKind, "charts")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "1.0.0")
	good := hc.Status.Artifact.DeepCopy()

	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.ValuesFiles = []string{"values-hostile.yaml", "values-hostile.yaml"}
	g.Expect(k8s.Patch(context.Background(), hc, patch)).To(Succeed())
	waitHelmFailed(t, hc, meta.LimitExceededReason)
	ready := conditionOf(hc, meta.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("packaging the chart passed its memory limit of 96 MiB (--chart-worker-memory); its chart worker was stopped"))
	g.Expect(conditionOf(hc, sourcev1.BuildFailedCondition).Reason).To(Equal(meta.LimitExceededReason))
	g.Expect(hc.Status.Artifact).To(Equal(good))
	evs := streamEvents(t, events.Subject(sourcev1.HelmChartKind, ns, "app"), 2)
	g.Expect(evs[0].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[1].Reason).To(Equal(meta.LimitExceededReason))
	g.Expect(evs[1].Message).To(ContainSubstring("(--chart-worker-memory)"))

	// Another HelmChart of the same source packages meanwhile.
	other := newHelmChart(ns, "other", "charts/app", "", sourcev1.GitRepositoryKind, "charts")
	g.Expect(k8s.Create(context.Background(), other)).To(Succeed())
	waitHelmReady(t, other, "1.0.0")
	g.Expect(other.Status.Artifact.Digest).To(Equal(good.Digest))
}
