package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// helmChart is the story's chart at a version: a Deployment, a ConfigMap
// whose data comes from values, a pre-install/pre-upgrade hook Job and a
// post-upgrade-only hook Job, and (withService) a Service. color is the
// chart's default for the value of that name; the greeting comes from the
// HelmRelease's Secret.
func helmChart(version, color string, withService bool) testhelm.Chart {
	files := testhelm.Files{
		"values.yaml": "greeting: the chart's default greeting\ncolor: " + color + "\nreplicas: 1\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
      - name: hello
        image: registry.example/hello:{{ .Chart.AppVersion }}
`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hello-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  color: {{ .Values.color | quote }}
`,
		// Runs before the objects on the install and on every upgrade;
		// kept after it succeeded (before-hook-creation) so the test can
		// see which chart version ran it.
		"templates/migrate-job.yaml": hookJob("hello-migrate", "pre-install,pre-upgrade", "-5", "before-hook-creation"),
		// Runs after the objects, on upgrades only.
		"templates/notify-job.yaml": hookJob("hello-notify", "post-upgrade", "0", "before-hook-creation"),
	}
	if withService {
		files["templates/service.yaml"] = `apiVersion: v1
kind: Service
metadata:
  name: hello
  namespace: {{ .Release.Namespace }}
spec:
  selector: {app: hello}
  ports:
  - port: 80
`
	}
	return testhelm.Chart{Name: "hello", Version: version, AppVersion: "1.0", Files: files}
}

// hookJob is a hook Job template that records the chart version it ran for.
func hookJob(name, hook, weight, policy string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: ` + hook + `
    helm.sh/hook-weight: "` + weight + `"
    helm.sh/hook-delete-policy: ` + policy + `
    e2e.plumb.dev/chart-version: {{ .Chart.Version | quote }}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: hook
        image: registry.example/hook:1.0
`
}

// helmStory is the HelmRelease story's objects: the Plumb objects in ns,
// the release in appNS.
type helmStory struct {
	t     *testing.T
	g     *WithT
	ctx   context.Context
	ns    string
	appNS string
	key   types.NamespacedName
}

// A chart from an HTTP chart repository (the SDK-built index served on
// 127.0.0.1), installed by a HelmRelease with values from a Secret,
// upgraded by a version bump in the repository (a value changed, an
// object removed), with its pre-install/pre-upgrade and post-upgrade hooks
// run, new values from the Secret released, a foreign edit reverted, a
// broken version refused with nothing deleted, and an uninstall that
// leaves nothing of the release.
func TestHelmReleaseFromAChartRepository(t *testing.T) {
	s, repo := newHelmStory(t, "e2e-helm", helmChart("1.0.0", "blue", true), "Hello from a Secret")
	g, ctx := s.g, s.ctx
	deployer(ctx, g, s.ns, "deployer", "admin", s.appNS)
	g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "hello"},
		Spec: helmv2.HelmReleaseSpec{
			Interval:           metav1.Duration{Duration: 10 * time.Minute},
			ReleaseName:        "hello",
			TargetNamespace:    s.appNS,
			ServiceAccountName: "deployer",
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "hello",
				Version:   ">=1.0.0 <2.0.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			ValuesFrom: []helmv2.ValuesReference{{Kind: "Secret", Name: "hello-values"}},
			// spec.values wins over the chart's defaults, valuesFrom over
			// nothing here: the greeting is the Secret's.
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)},
		},
	})).To(Succeed())

	// The install: Ready and Released, v1 deployed, the Secret's values in
	// the ConfigMap, the pre-install hook run and the post-upgrade one not.
	hr := s.waitReleased("1.0.0", helmv2.InstallSucceededReason)
	g.Expect(hr.Status.History).To(HaveLen(1))
	s.expectSnapshot(hr.Status.History[0], 1, "1.0.0", helmv2.ReleaseStatusDeployed)
	s.expectConfigMap("Hello from a Secret", "blue")
	s.waitDeploymentAvailable(2)
	migrate := s.expectHookRan("hello-migrate", "1.0.0")
	s.expectNotFound(&batchv1.Job{}, "hello-notify", "a post-upgrade hook ran on the install")
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello"}, &corev1.Service{})).To(Succeed())
	g.Expect(inventoryIDs(hr.Status.Inventory)).To(ConsistOf(
		"ConfigMap/"+s.appNS+"/hello-config", "Deployment/"+s.appNS+"/hello", "Service/"+s.appNS+"/hello"), "hooks are not in the inventory")
	chartKey := types.NamespacedName{Namespace: s.ns, Name: hr.GetHelmChartName()}
	g.Expect(hr.Status.HelmChart).To(Equal(chartKey.String()))
	out := s.plumb("get", "helmreleases", "-n", s.ns)
	g.Expect(out).To(MatchRegexp(`(?m)^hello\s.*True.*1\.0\.0`), "plumb get helmreleases")

	// A new version in the repository, a value changed and the Service
	// gone. `plumb reconcile helmrelease --with-source` has the index
	// fetched now; the HelmChart picks the new version in its range, and
	// the upgrade runs the pre-upgrade and post-upgrade hooks and prunes
	// the Service.
	g.Expect(repo.Add(helmChart("1.1.0", "green", false))).To(Succeed())
	s.plumb("reconcile", "helmrelease", "hello", "--with-source", "-n", s.ns)
	g.Eventually(func(g Gomega) {
		c := &sourcev1.HelmChart{}
		g.Expect(env.Client.Get(ctx, chartKey, c)).To(Succeed())
		g.Expect(c.Status.Artifact).NotTo(BeNil())
		g.Expect(c.Status.Artifact.Revision).To(Equal("1.1.0"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the HelmChart did not pick up 1.1.0")
	hr = s.waitReleased("1.1.0", helmv2.UpgradeSucceededReason)
	g.Expect(hr.Status.History).To(HaveLen(2))
	s.expectSnapshot(hr.Status.History[0], 2, "1.1.0", helmv2.ReleaseStatusDeployed)
	s.expectSnapshot(hr.Status.History[1], 1, "1.0.0", helmv2.ReleaseStatusSuperseded)
	g.Expect(hr.Status.History[0].ConfigDigest).To(Equal(hr.Status.History[1].ConfigDigest), "the user's values did not change")
	s.expectConfigMap("Hello from a Secret", "green")
	again := s.expectHookRan("hello-migrate", "1.1.0")
	g.Expect(again.UID).NotTo(Equal(migrate.UID), "before-hook-creation: the upgrade's hook is a new Job")
	s.expectHookRan("hello-notify", "1.1.0")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello"}, &corev1.Service{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the Service left the chart and was not pruned")
	g.Expect(inventoryIDs(hr.Status.Inventory)).To(ConsistOf("ConfigMap/"+s.appNS+"/hello-config", "Deployment/"+s.appNS+"/hello"))
	s.waitDeploymentAvailable(2)

	// New values in the Secret: a new release of the same chart version,
	// with a new values digest and the pre-upgrade hook run again.
	// render-controller does not watch Secrets (that would need list and
	// watch on every Secret of the cluster): it reads them at the next
	// reconcile, which `plumb reconcile` requests now.
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: "hello-values"}, secret)).To(Succeed())
	secret.Data["values.yaml"] = []byte("greeting: Hello from a changed Secret\n")
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	s.plumb("reconcile", "helmrelease", "hello", "-n", s.ns)
	g.Eventually(func(g Gomega) {
		got := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, s.key, got)).To(Succeed())
		g.Expect(got.Status.History).NotTo(BeEmpty())
		g.Expect(got.Status.History[0].Version).To(Equal(3), "%s", helmConditions(got))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the Secret's change made no new release")
	hr = s.waitReleased("1.1.0", helmv2.UpgradeSucceededReason)
	g.Expect(hr.Status.History).To(HaveLen(3))
	s.expectSnapshot(hr.Status.History[0], 3, "1.1.0", helmv2.ReleaseStatusDeployed)
	s.expectSnapshot(hr.Status.History[1], 2, "1.1.0", helmv2.ReleaseStatusSuperseded)
	g.Expect(hr.Status.History[0].ConfigDigest).NotTo(Equal(hr.Status.History[1].ConfigDigest), "the values changed")
	s.expectConfigMap("Hello from a changed Secret", "green")
	g.Expect(s.expectHookRan("hello-migrate", "1.1.0").UID).NotTo(Equal(again.UID), "the pre-upgrade hook ran for v3")

	// A foreign edit under another field manager is reverted.
	cmKey := types.NamespacedName{Namespace: s.appNS, Name: "hello-config"}
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, cmKey, cm)).To(Succeed())
	cm.Data["greeting"] = "edited by hand"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		live := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, cmKey, live)).To(Succeed())
		g.Expect(live.Data).To(HaveKeyWithValue("greeting", "Hello from a changed Secret"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the foreign edit was not reverted")
	// The cluster is the render again: plumb diff finds nothing (exit 0),
	// and plumb tree shows the release's objects.
	s.plumb("diff", "helmrelease", "hello", "-n", s.ns)
	g.Expect(s.plumb("tree", "helmrelease", "hello", "-n", s.ns)).To(And(
		ContainSubstring("ConfigMap/"+s.appNS+"/hello-config"), ContainSubstring("Deployment/"+s.appNS+"/hello")))
	g.Expect(s.plumb("get", "sources", "chart", "-n", s.ns)).To(MatchRegexp(`(?m)^` + chartKey.Name + `\s.*True.*1\.1\.0`))

	// A broken version in the repository: the HelmChart packages it, the
	// render fails with the template named, and the release keeps running
	// what it had (nothing deleted, v3 still deployed).
	broken := helmChart("1.2.0", "green", false)
	broken.Files["templates/configmap.yaml"] = "{{ .Values.greeting | nosuchfunction }}\n"
	g.Expect(repo.Add(broken)).To(Succeed())
	s.plumb("reconcile", "source", "helm", "charts", "-n", s.ns)
	g.Eventually(func(g Gomega) {
		got := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, s.key, got)).To(Succeed())
		rendered := conditions.Get(got, kustomizev1.RenderedCondition)
		g.Expect(rendered).NotTo(BeNil())
		g.Expect(rendered.Status).To(Equal(metav1.ConditionFalse), "%s", helmConditions(got))
		g.Expect(rendered.Reason).To(Equal(kustomizev1.BuildFailedReason))
		g.Expect(rendered.Message).To(And(ContainSubstring("1.2.0"), ContainSubstring("configmap.yaml")))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the broken chart version was not refused")
	hr = &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, s.key, hr)).To(Succeed())
	t.Logf("%s: %s", s.key, helmConditions(hr))
	g.Expect(hr.Status.LastAppliedRevision).To(Equal("1.1.0"))
	g.Expect(hr.Status.History[0].Version).To(Equal(3))
	g.Expect(hr.Status.History[0].Status).To(Equal(helmv2.ReleaseStatusDeployed))
	for _, e := range hr.Status.Inventory.Entries {
		obj := inventoryObject(e)
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "%s/%s/%s was deleted", e.Kind, e.Namespace, e.Name)
	}
	s.expectConfigMap("Hello from a changed Secret", "green")

	// The uninstall, while the latest version does not render: every
	// object of the release goes, and so does the HelmChart
	// render-controller created for it.
	inventory := hr.Status.Inventory.DeepCopy()
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, s.key, &helmv2.HelmRelease{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the HelmRelease was not deleted")
	for _, e := range inventory.Entries {
		obj := inventoryObject(e)
		g.Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "%s/%s/%s was not uninstalled", e.Kind, e.Namespace, e.Name)
	}
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}} {
		g.Expect(env.Client.List(ctx, list, client.InNamespace(s.appNS), client.MatchingLabels{helmv2.NameLabel: "hello", helmv2.NamespaceLabel: s.ns})).To(Succeed())
		g.Expect(list).To(HaveField("Items", BeEmpty()), "objects labelled for the release are left")
	}
	// Hooks are not objects of the release: as `helm uninstall` does, the
	// uninstall leaves the last hook Jobs (docs/design/helm.md).
	for _, name := range []string{"hello-migrate", "hello-notify"} {
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: s.appNS, Name: name}, &batchv1.Job{})).To(Succeed(), "hook %s", name)
	}
	g.Eventually(func() error {
		return env.Client.Get(ctx, chartKey, &sourcev1.HelmChart{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the HelmChart %s was not deleted", chartKey)
}

// newHelmStory starts a story of the HelmRelease hello in namespace ns,
// its release in ns+"-app": a chart repository serving first, the Secret
// hello-values with the greeting, and the HelmRepository charts with a
// long interval (a new version is fetched on request, plumb reconcile,
// not by waiting).
func newHelmStory(t *testing.T, ns string, first testhelm.Chart, greeting string) (*helmStory, *testhelm.Repo) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s := &helmStory{t: t, g: g, ctx: ctx, ns: ns, appNS: ns + "-app"}
	s.key = types.NamespacedName{Namespace: s.ns, Name: "hello"}
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(repo.Close)
	g.Expect(repo.Add(first)).To(Succeed())
	for _, name := range []string{s.ns, s.appNS} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "hello-values"},
		StringData: map[string]string{"values.yaml": "greeting: " + greeting + "\n"},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "charts"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: 10 * time.Minute}},
	})).To(Succeed())
	return s, repo
}

// waitReleased waits until the HelmRelease is Ready and Released with
// reason at its current generation, with version applied.
func (s *helmStory) waitReleased(version, reason string) *helmv2.HelmRelease {
	s.t.Helper()
	var hr *helmv2.HelmRelease
	s.g.Eventually(func(g Gomega) {
		hr = &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(s.ctx, s.key, hr)).To(Succeed())
		g.Expect(hr.Status.LastAppliedRevision).To(Equal(version), "lastAppliedRevision; %s", helmConditions(hr))
		g.Expect(conditions.IsReady(hr)).To(BeTrue(), "%s", helmConditions(hr))
		g.Expect(conditions.IsTrue(hr, helmv2.ReleasedCondition)).To(BeTrue(), "%s", helmConditions(hr))
		g.Expect(conditions.GetReason(hr, helmv2.ReleasedCondition)).To(Equal(reason))
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "HelmRelease %s", s.key)
	s.t.Logf("%s: %s", s.key, helmConditions(hr))
	return hr
}

func (s *helmStory) expectSnapshot(snap helmv2.Snapshot, version int, chartVersion, status string) {
	s.t.Helper()
	s.g.Expect(snap.Version).To(Equal(version))
	s.g.Expect(snap.Name).To(Equal("hello"))
	s.g.Expect(snap.Namespace).To(Equal(s.appNS))
	s.g.Expect(snap.ChartName).To(Equal("hello"))
	s.g.Expect(snap.ChartVersion).To(Equal(chartVersion))
	s.g.Expect(snap.ConfigDigest).To(HavePrefix("sha256:"))
	s.g.Expect(snap.Status).To(Equal(status), "history v%d", version)
}

func (s *helmStory) expectConfigMap(greeting, color string) {
	s.t.Helper()
	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello-config"}, cm)).To(Succeed())
	s.g.Expect(cm.Data).To(Equal(map[string]string{"greeting": greeting, "color": color}))
	s.g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "hello"))
	s.g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NamespaceLabel, s.ns))
}

// expectHookRan checks that the hook Job exists for chartVersion and
// succeeded: the release is Released only after its hooks succeeded.
func (s *helmStory) expectHookRan(name, chartVersion string) *batchv1.Job {
	s.t.Helper()
	job := &batchv1.Job{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.appNS, Name: name}, job)).To(Succeed(), "hook %s", name)
	s.g.Expect(job.Annotations).To(HaveKeyWithValue("e2e.plumb.dev/chart-version", chartVersion), "hook %s", name)
	s.g.Expect(job.Status.Succeeded).To(BeEquivalentTo(1), "hook %s", name)
	return job
}

// expectNotFound checks that the object does not exist; any other error
// of the Get fails.
func (s *helmStory) expectNotFound(obj client.Object, name, why string) {
	s.t.Helper()
	err := env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.appNS, Name: name}, obj)
	s.g.Expect(err).To(HaveOccurred(), why)
	s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %v", why, err)
}

// waitDeploymentAvailable waits until the release's Deployment has its
// replicas available (kube-controller-manager and the pod simulator).
func (s *helmStory) waitDeploymentAvailable(replicas int32) {
	s.t.Helper()
	s.g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello"}, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(*d.Spec.Replicas).To(Equal(replicas))
		g.Expect(d.Status.AvailableReplicas).To(Equal(replicas))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// plumb runs the plumb command line against the environment and returns
// its output.
func (s *helmStory) plumb(args ...string) string {
	s.t.Helper()
	return runPlumb(s.ctx, s.t, args...)
}

func helmConditions(hr *helmv2.HelmRelease) string {
	var out []string
	for _, t := range []string{meta.ReadyCondition, helmv2.ReleasedCondition, kustomizev1.RenderedCondition} {
		c := conditions.Get(hr, t)
		if c == nil {
			out = append(out, t+": none")
			continue
		}
		out = append(out, t+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
	}
	return strings.Join(out, "; ")
}
