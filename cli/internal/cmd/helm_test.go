package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/testenv"
)

func helmRepo(ns, name string) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.HelmRepositorySpec{URL: "https://charts.example.com/" + name, Interval: metav1.Duration{Duration: time.Minute}},
	}
}

func helmChart(ns, name, chart, repo string) *sourcev1.HelmChart {
	return &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.HelmChartSpec{Chart: chart, Version: "1.x",
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: repo},
			Interval:  metav1.Duration{Duration: time.Minute}},
	}
}

// helmRelease is a HelmRelease of chart from the HelmRepository repo, as
// spec.chart (render-controller's HelmChart <ns>-<name>).
func helmRelease(ns, name, chart, repo string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: chart, Version: "1.x",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: repo}}},
		},
	}
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	valuesA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

func TestGetHelmKinds(t *testing.T) {
	ctx, ns := newNamespace(t)
	repo := helmRepo(ns, "podinfo")
	chart := helmChart(ns, ns+"-web", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	hr.Spec.Suspend = true
	create(ctx, t, repo, chart, hr, gitRepo(ns, "git"))
	setStatus(ctx, t, repo, func(o *sourcev1.HelmRepository) {
		o.Status.Artifact = artifact("sha256:" + strings.Repeat("c", 64))
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored index", o.Generation)}
	})
	setStatus(ctx, t, chart, func(o *sourcev1.HelmChart) {
		o.Status.Artifact = artifact("1.2.3")
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "packaged podinfo 1.2.3", o.Generation)}
	})
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.LastAppliedRevision = "1.2.3"
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "released podinfo 1.2.3", o.Generation)}
	})

	for _, tc := range []struct {
		args []string
		row  []string
	}{
		{[]string{"sources", "helm"}, []string{"podinfo", "True", "sha256:" + strings.Repeat("c", 64)}},
		{[]string{"source", "helm"}, []string{"podinfo", "True", "sha256:" + strings.Repeat("c", 64)}},
		{[]string{"helmrepositories"}, []string{"podinfo", "True", "sha256:" + strings.Repeat("c", 64)}},
		{[]string{"sources", "chart"}, []string{ns + "-web", "True", "1.2.3"}},
		{[]string{"helmcharts"}, []string{ns + "-web", "True", "1.2.3"}},
		{[]string{"helmreleases"}, []string{"web", "True", "1.2.3", "", "(suspended)"}},
		{[]string{"hr"}, []string{"web", "True", "1.2.3", "", "(suspended)"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(append([]string{"get"}, tc.args...), "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			got := fields(lines(r.out))
			g.Expect(got).To(HaveLen(2), r.String())
			g.Expect(got[0]).To(Equal([]string{"NAME", "READY", "REVISION", "AGE", "MESSAGE"}))
			g.Expect(got[1][:3]).To(Equal(tc.row[:3]))
			if len(tc.row) > 3 {
				g.Expect(got[1][4]).To(Equal(tc.row[4]), "a suspended object's message says so")
			}
		})
	}

	t.Run("sources all has one table per source kind", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "sources", "all", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		blocks := strings.Split(strings.TrimSpace(r.out), "\n\n")
		g.Expect(blocks).To(HaveLen(3), r.String())
		for i, want := range []string{"gitrepository/git", "helmrepository/podinfo", "helmchart/" + ns + "-web"} {
			g.Expect(fields(lines(blocks[i]))[1][0]).To(Equal(want))
		}
	})

	t.Run("get all lists the helm kinds", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "all", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		blocks := strings.Split(strings.TrimSpace(r.out), "\n\n")
		g.Expect(blocks).To(HaveLen(4), r.String())
		for i, want := range []string{"gitrepository/git", "helmrepository/podinfo", "helmchart/" + ns + "-web", "helmrelease/web"} {
			g.Expect(fields(lines(blocks[i]))[1][0]).To(Equal(want))
		}
	})

	t.Run("stats counts them with their storage", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("stats", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		rows := map[string][]string{}
		for _, f := range fields(lines(r.out)) {
			rows[f[0]] = f
		}
		g.Expect(rows).To(HaveKey("HelmRepository"))
		g.Expect(rows["HelmRepository"][1:5]).To(Equal([]string{"1", "0", "0", "1"}))
		g.Expect(rows["HelmChart"][1:5]).To(Equal([]string{"1", "0", "0", "1"}))
		g.Expect(rows["HelmRelease"][1:5]).To(Equal([]string{"0", "0", "1", "1"}))
	})
}

func TestGetHelmReleaseInDetail(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	web := webDeployment(ns)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	repo := helmRepo(ns, "podinfo")
	chart := helmChart(ns, ns+"-web", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn}
	hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 1}}
	create(ctx, t, web, cfg, repo, chart, hr)
	setStatus(ctx, t, chart, func(o *sourcev1.HelmChart) { o.Status.Artifact = artifact("1.3.0") })
	earlier := metav1.NewTime(time.Now().Add(-time.Hour))
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.HelmChart = ns + "/" + ns + "-web"
		o.Status.LastAppliedRevision = "1.2.3"
		o.Status.LastAttemptedRevision = "1.3.0"
		o.Status.LastAttemptedConfigDigest = valuesA
		o.Status.LastAttemptedReleaseAction = helmv2.ReleaseActionUpgrade
		o.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: 5 * time.Minute}
		o.Status.Failures, o.Status.UpgradeFailures = 2, 2
		o.Status.RenderedArtifact = &meta.Artifact{Path: "p", URL: "http://example/p", Revision: "1.3.0", Digest: digestB, LastUpdateTime: metav1.Now(),
			Metadata: map[string]string{helmv2.ArtifactChartNameKey: "podinfo", helmv2.ArtifactChartVersionKey: "1.3.0", helmv2.ArtifactConfigDigestKey: valuesA}}
		o.Status.History = []helmv2.Snapshot{
			{Version: 2, Name: "web", Namespace: ns, ChartName: "podinfo", ChartVersion: "1.3.0", ConfigDigest: valuesA, Digest: digestB,
				FirstDeployed: metav1.Now(), LastDeployed: metav1.Now(), Status: helmv2.ReleaseStatusFailed,
				Description: "Upgrade \"web\" failed: timed out waiting for health:\nDeployment/web is Progressing"},
			{Version: 1, Name: "web", Namespace: ns, ChartName: "podinfo", ChartVersion: "1.2.3", ConfigDigest: valuesA, Digest: digestA,
				FirstDeployed: earlier, LastDeployed: earlier, Status: helmv2.ReleaseStatusDeployed},
		}
		o.Status.Conditions = []metav1.Condition{
			cond(helmv2.ReleasedCondition, "False", kustomizev1.HealthCheckFailedReason, "upgrade to 1.3.0 failed", o.Generation),
			cond(kustomizev1.RenderedCondition, "True", kustomizev1.RenderSucceededReason, "rendered podinfo 1.3.0", o.Generation),
			cond(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, "health check failed after 5m", o.Generation),
			cond(helmv2.RemediatedCondition, "False", helmv2.RollbackFailedReason, "rollback to podinfo@1.2.3 failed: apply refused", o.Generation),
		}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
		}}
		o.Status.Drift = &kustomizev1.DriftStatus{Count: 1, Paths: []string{"ConfigMap/" + ns + "/cfg:data.mode"}}
	})

	r := plumb("get", "helmrelease", "web", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	got := lines(r.out)
	field := func(name string) string { return detailField(t, got, name) }
	g.Expect(field("Name")).To(Equal("web"))
	g.Expect(field("Chart")).To(Equal("podinfo 1.x from HelmRepository/podinfo, HelmChart/" + ns + "/" + ns + "-web at 1.3.0, https://charts.example.com/podinfo"))
	g.Expect(field("Release")).To(Equal(ns + "/web, installed"))
	g.Expect(field("Applied revision")).To(Equal("1.2.3"))
	g.Expect(field("Attempted revision")).To(Equal("1.3.0 (values " + valuesA + ")"))
	g.Expect(field("Rendered revision")).To(Equal("1.3.0 (" + digestB + "), chart podinfo 1.3.0, values " + valuesA))
	g.Expect(field("Inventory")).To(Equal("2 object(s)"))
	g.Expect(field("Sync status")).To(Equal("OutOfSync (1 object(s) differ from the chart), driftDetection warn"))
	g.Expect(field("Last sync result")).To(Equal("Ready=False HealthCheckFailed: health check failed after 5m"))
	g.Expect(field("Last attempt")).To(Equal("upgrade of 1.3.0, took 5m0s, HealthCheckFailed"))
	g.Expect(field("Failures")).To(Equal("2 (install 0, upgrade 2)"))
	g.Expect(field("On failure")).To(Equal("upgrade: RemediateOnFailure, retries 1, remediation rollback, last failure remediated"))
	g.Expect(field("Remediation")).To(Equal("RollbackFailed: rollback to podinfo@1.2.3 failed: apply refused"))

	section := func(title string) [][]string { return detailSection(got, title) }
	history := section("HISTORY:")
	g.Expect(history).To(HaveLen(3), r.String())
	g.Expect(history[0]).To(Equal([]string{"REVISION", "STATUS", "CHART", "VALUES", "DIGEST", "DEPLOYED", "DESCRIPTION"}))
	g.Expect(history[1][:5]).To(Equal([]string{"2", "failed", "podinfo-1.3.0", "sha256:111111111111", "sha256:bbbbbbbbbbbb"}))
	g.Expect(history[2][:5]).To(Equal([]string{"1", "deployed", "podinfo-1.2.3", "sha256:111111111111", "sha256:aaaaaaaaaaaa"}))
	g.Expect(history[2][5]).To(Equal("60m"))
	g.Expect(strings.Join(history[1][7:], " ")).To(Equal(`Upgrade "web" failed: timed out waiting for health: Deployment/web is Progressing`), "why it failed, on one line")

	conds := section("CONDITIONS:")
	g.Expect(conds).To(HaveLen(5), r.String())
	g.Expect(conds[1][:3]).To(Equal([]string{"Ready", "False", "HealthCheckFailed"}), "Ready comes first")
	g.Expect(conds[2][:3]).To(Equal([]string{"Released", "False", "HealthCheckFailed"}))

	objs := section("OBJECTS:")
	g.Expect(objs).To(HaveLen(3), r.String())
	g.Expect(objs[1]).To(Equal([]string{"ConfigMap", ns, "cfg", "Healthy:", "exists", "drifted", "data.mode"}))
	g.Expect(objs[2][:4]).To(Equal([]string{"Deployment", ns, "web", "Progressing:"}))

	t.Run("installing, chartRef, nothing yet", func(t *testing.T) {
		g := NewWithT(t)
		fresh := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"},
			Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Minute}, TargetNamespace: "apps",
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: ns + "-web"}},
		}
		create(ctx, t, fresh)
		r := plumb("get", "hr", "fresh", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(MatchRegexp(`(?m)^Chart:\s+HelmChart/` + ns + `/` + ns + `-web \(podinfo 1.x from HelmRepository/podinfo\) at 1.3.0, https://charts.example.com/podinfo$`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Release:\s+apps/apps-fresh, installing \(no release deployed yet\)$`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Sync status:\s+Unknown \(nothing applied yet\), driftDetection enabled$`))
		g.Expect(r.out).To(ContainSubstring("HISTORY:\n(no release yet)\n"))
		g.Expect(r.out).To(MatchRegexp(`(?m)^On failure:\s+install: RemediateOnFailure, retries 0, remediation uninstall, last failure left as it is$`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Last attempt:\s+-$`))
		g.Expect(r.out).To(ContainSubstring("OBJECTS:\n(no objects applied yet)\n"))
	})
}

// writeHelmChart sets a HelmChart's status as source-controller would.
func writeHelmChart(o *sourcev1.HelmChart, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "building chart "+o.Spec.Chart, o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	o.Status.Artifact = artifact(r.revision)
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, r.message, o.Generation)}
}

// writeHelmRepository sets a HelmRepository's status as source-controller would.
func writeHelmRepository(o *sourcev1.HelmRepository, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "fetching index of "+o.Spec.URL, o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	o.Status.Artifact = artifact(r.revision)
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, r.message, o.Generation)}
}

// writeHelmRelease sets a HelmRelease's status as sync-controller would.
func writeHelmRelease(o *helmv2.HelmRelease, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Sync = &kustomizev1.SyncProgress{Phase: kustomizev1.PhasePreSync, Wave: -1, Message: "waiting for Job/app/migrate"}
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "upgrading", o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	o.Status.Sync.Phase = kustomizev1.PhaseSucceeded
	o.Status.LastAppliedRevision = r.revision
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, r.message, o.Generation)}
}

func TestReconcileHelmReleaseWithSource(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := helmRepo(ns, "podinfo")
	chart := helmChart(ns, ns+"-web", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	create(ctx, t, repo, chart, hr)
	const index = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	standIn(t, repo, outcome{ready: true, message: "stored index", revision: index}, writeHelmRepository)
	standIn(t, chart, outcome{ready: true, message: "packaged", revision: "1.4.0"}, writeHelmChart)
	standIn(t, hr, outcome{ready: true, message: "released", revision: "1.4.0"}, writeHelmRelease)
	// A stand-in render-controller: it renders the HelmChart's artifact.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for rctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			c, h := &sourcev1.HelmChart{}, &helmv2.HelmRelease{}
			if env.Client.Get(rctx, client.ObjectKeyFromObject(chart), c) != nil || env.Client.Get(rctx, client.ObjectKeyFromObject(hr), h) != nil {
				continue
			}
			if c.Status.Artifact == nil || (h.Status.RenderedArtifact != nil && h.Status.RenderedArtifact.Revision == c.Status.Artifact.Revision) {
				continue
			}
			h.Status.RenderedArtifact = artifact(c.Status.Artifact.Revision)
			apimeta.SetStatusCondition(&h.Status.Conditions, cond(kustomizev1.RenderedCondition, "True", kustomizev1.RenderSucceededReason, "rendered", h.Generation))
			_ = env.Client.Status().Update(rctx, h)
		}
	}()

	r := plumb("reconcile", "helmrelease", "web", "--with-source", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := r.out
	repoDone := strings.Index(out, "✔ HelmRepository/"+ns+"/podinfo reconciled, revision "+index)
	chartDone := strings.Index(out, "✔ HelmChart/"+ns+"/"+ns+"-web reconciled, revision 1.4.0")
	hrAsked := strings.Index(out, "► reconcile of HelmRelease/"+ns+"/web requested")
	g.Expect(repoDone).To(BeNumerically(">=", 0), out)
	g.Expect(chartDone).To(BeNumerically(">", repoDone), "the repository goes first:\n"+out)
	g.Expect(hrAsked).To(BeNumerically(">", chartDone), "then the chart:\n"+out)
	g.Expect(out).To(ContainSubstring("◎ PreSync phase, wave -1: waiting for Job/app/migrate"))
	g.Expect(out).To(HaveSuffix("✔ HelmRelease/" + ns + "/web reconciled, revision 1.4.0\n"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
	g.Expect(hr.Status.RenderedArtifact.Revision).To(Equal("1.4.0"), "the sync was asked for once the new chart was rendered")

	t.Run("source helm and source chart", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("reconcile", "source", "helm", "podinfo", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(HaveSuffix("✔ HelmRepository/" + ns + "/podinfo reconciled, revision " + index + "\n"))
		r = plumb("reconcile", "source", "chart", ns+"-web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(HaveSuffix("✔ HelmChart/" + ns + "/" + ns + "-web reconciled, revision 1.4.0\n"))
	})

	t.Run("a missing HelmChart", func(t *testing.T) {
		g := NewWithT(t)
		orphan := helmRelease(ns, "orphan", "podinfo", "podinfo")
		create(ctx, t, orphan)
		r := plumb("reconcile", "hr", "orphan", "--with-source", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("HelmChart " + ns + "-orphan not found in namespace " + ns + ": render-controller creates it for spec.chart"))
	})
}

func TestSuspendResumeHelmKinds(t *testing.T) {
	ctx, ns := newNamespace(t)
	repo := helmRepo(ns, "podinfo")
	chart := helmChart(ns, "chart", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	create(ctx, t, repo, chart, hr)
	for _, tc := range []struct {
		words []string
		obj   client.Object
		ref   string
	}{
		{[]string{"source", "helm", "podinfo"}, repo, "HelmRepository/" + ns + "/podinfo"},
		{[]string{"source", "chart", "chart"}, chart, "HelmChart/" + ns + "/chart"},
		{[]string{"helmrelease", "web"}, hr, "HelmRelease/" + ns + "/web"},
		{[]string{"hr", "web"}, hr, "HelmRelease/" + ns + "/web"},
	} {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			g := NewWithT(t)
			suspended := func() bool {
				u := tc.obj.DeepCopyObject().(client.Object)
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tc.obj), u)).To(Succeed())
				return kindOf(u).status(u).suspended
			}
			r := plumb(append(append([]string{"suspend"}, tc.words...), "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(r.out).To(Equal("✔ " + tc.ref + " suspended\n"))
			g.Expect(suspended()).To(BeTrue())

			r = plumb(append(append([]string{"reconcile"}, tc.words...), "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitError), r.String())
			g.Expect(r.errOut).To(ContainSubstring(tc.ref + " is suspended: resume it first"))

			r = plumb(append(append([]string{"resume"}, tc.words...), "-n", ns, "--wait=false")...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(r.out).To(Equal("► " + tc.ref + " resumed\n"))
			g.Expect(suspended()).To(BeFalse())
			u := tc.obj.DeepCopyObject().(client.Object)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tc.obj), u)).To(Succeed())
			g.Expect(u.GetAnnotations()).To(HaveKey(meta.ReconcileRequestAnnotation), "resuming requests a reconcile")
		})
	}
}

func TestExportHelmKinds(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := helmRepo(ns, "podinfo")
	repo.Spec.Type = sourcev1.HelmRepositoryTypeDefault
	chart := helmChart(ns, "chart", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	hr.Labels = map[string]string{"team": "a", helmv2.NameLabel: "parent", helmv2.NamespaceLabel: ns,
		kustomizev1.NameLabel: "infra", kustomizev1.NamespaceLabel: ns}
	hr.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "2026-01-01T00:00:00Z"}
	hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
	create(ctx, t, repo, chart, hr)
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) { o.Status.LastAppliedRevision = "1.2.3" })

	r := plumb("export", "helmrelease", "web", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(Equal(`apiVersion: helm.plumb.dev/v2
kind: HelmRelease
metadata:
  labels:
    team: a
  name: web
  namespace: ` + ns + `
spec:
  chart:
    spec:
      chart: podinfo
      reconcileStrategy: ChartVersion
      sourceRef:
        kind: HelmRepository
        name: podinfo
      version: 1.x
  interval: 1m0s
  values:
    replicas: 2
`))

	r = plumb("export", "source", "all", "--all", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	docs := strings.Split(r.out, "---\n")
	g.Expect(docs).To(HaveLen(2), r.String())
	var kinds []string
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(d), &u.Object)).To(Succeed())
		g.Expect(u.Object).NotTo(HaveKey("status"))
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
	}
	g.Expect(kinds).To(Equal([]string{"HelmRepository/podinfo", "HelmChart/chart"}))
}

// helmManifests is a HelmRelease's render: objects without a namespace
// (the release namespace), a hook, a kept object and a crds/ CRD created
// only when missing.
const helmManifests = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.cli-helm.example.com
  annotations:
    plumb.dev/ssa: IfNotPresent
    plumb.dev/prune: disabled
spec:
  group: cli-helm.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  mode: fast
  password: from-a-values-secret
  ignored: from-chart
---
apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-weight: "-1"
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox
`

// syncHelmAsController applies a HelmRelease's render the way
// sync-controller does (stamped with the helm.plumb.dev labels, server-side
// apply as plumb-sync, hooks left to the sync) and records the inventory.
func syncHelmAsController(ctx context.Context, t *testing.T, hr *helmv2.HelmRelease, a *meta.Artifact, data []byte, extra ...*unstructured.Unstructured) {
	t.Helper()
	done := applyAsController(ctx, t, appliedHelmRelease(hr), data)
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.RenderedArtifact = a
		o.Status.Inventory = inventory.New(append(done, extra...))
		o.Status.History = []helmv2.Snapshot{{Version: 1, Name: "web", Namespace: o.GetReleaseNamespace(), ChartName: "web", ChartVersion: a.Revision,
			ConfigDigest: valuesA, Digest: a.Digest, FirstDeployed: metav1.Now(), LastDeployed: metav1.Now(), Status: helmv2.ReleaseStatusDeployed}}
	})
}

func TestDiffHelmRelease(t *testing.T) {
	ctx, ns := newNamespace(t)
	_, target := newNamespace(t)
	srv := testenv.NewArtifactServer(t)
	hr := helmRelease(ns, "web", "web", "charts")
	hr.Spec.TargetNamespace = target
	hr.Spec.ValuesFrom = []helmv2.ValuesReference{{Kind: "Secret", Name: "web-values"}}
	hr.Spec.DriftDetection = &helmv2.DriftDetection{Ignore: []kustomizev1.IgnoreRule{{Paths: []string{"/data/ignored"}}}}
	values := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-values"},
		StringData: map[string]string{"values.yaml": "settings:\n  password: from-a-values-secret\n"}}
	create(ctx, t, hr, values)
	data := []byte(helmManifests)
	a := srv.ServeRendered("helmrelease", ns, "web", "1.0.0", data)

	// An object the previous release applied, and one the chart kept.
	owned := map[string]string{helmv2.NameLabel: "web", helmv2.NamespaceLabel: ns}
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "old", Labels: owned}}
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "kept", Labels: owned,
		Annotations: map[string]string{helmv2.ResourcePolicyAnnotation: helmv2.KeepPolicy}}}
	create(ctx, t, old, kept)
	stub := func(name string) *unstructured.Unstructured {
		return inventory.Object(kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: target, Name: name})
	}
	syncHelmAsController(ctx, t, hr, a, data)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "widgets.cli-helm.example.com"}}})
	})

	t.Run("in sync", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("diff", "helmrelease", "web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{
			"Comparing HelmRelease/" + ns + "/web with chart version 1.0.0 (" + a.Digest + ") (live → chart)",
			"(1 hook objects not compared: they run during a sync)",
			"✔ no drift: 2 objects match the chart",
		}))
	})

	t.Run("drift, a CRD left alone, objects to create and prune", func(t *testing.T) {
		g := NewWithT(t)
		foreignPatch(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "web-settings"}},
			`{"data":{"mode":"slow","password":"typed-by-hand","ignored":"by-hand"}}`)
		// A foreign change to the CRD is not drift: a sync never changes
		// an existing crds/ CRD under the Create policy.
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName("widgets.cli-helm.example.com")
		foreignPatch(ctx, t, crd, `{"metadata":{"labels":{"by":"hand"}},"spec":{"names":{"shortNames":["wg"]}}}`)
		setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
			o.Status.Inventory.Entries = append(o.Status.Inventory.Entries, inventory.EntryOf(stub("old")), inventory.EntryOf(stub("kept")))
		})

		r := plumb("diff", "hr", "web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(lines(r.out)).To(ConsistOf(
			"Comparing HelmRelease/"+ns+"/web with chart version 1.0.0 ("+a.Digest+") (live → chart)",
			"~ ConfigMap/"+target+"/web-settings",
			`    data.mode: "slow" → "fast"`,
			`    data.password: "<redacted>" → "<redacted>"`,
			"- ConfigMap/"+target+"/old (no longer in the chart; a sync prunes it)",
			"  ConfigMap/"+target+"/kept (no longer in the chart; kept by annotation helm.sh/resource-policy: keep)",
			"(1 hook objects not compared: they run during a sync)",
			"1 changed, 0 to create, 1 to prune, 1 unchanged",
		))
		g.Expect(r.out).NotTo(ContainSubstring("from-a-values-secret"))
		g.Expect(r.out).NotTo(ContainSubstring("typed-by-hand"), "a value next to a secret one is hidden too, as in a Kustomization's diff")

		// Nothing was written.
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: target, Name: "web-settings"}, &cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("mode", "slow"))
	})

	t.Run("a missing CRD is created", func(t *testing.T) {
		g := NewWithT(t)
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName("widgets.cli-helm.example.com")
		g.Expect(env.Client.Delete(ctx, crd)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
		}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
		r := plumb("diff", "hr", "web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.out).To(ContainSubstring("+ CustomResourceDefinition/widgets.cli-helm.example.com (not in the cluster; a sync creates it)"))
	})

	t.Run("--path is for a Kustomization", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("diff", "hr", "web", "-n", ns, "--path", ".")
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("--path compares a checkout with a Kustomization"))
	})
}

func TestTreeHelmRelease(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	hrCfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart-cfg"}}
	parent := kustomization(ns, "infra", "repo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	create(ctx, t, cfg, hrCfg, parent, hr)
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "released podinfo 1.2.3", o.Generation)}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "chart-cfg"},
			{Version: "v1", Kind: "Secret", Namespace: ns, Name: "gone"},
		}}
	})
	setStatus(ctx, t, parent, func(o *kustomizev1.Kustomization) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "applied", o.Generation)}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"},
			{Group: helmv2.GroupVersion.Group, Version: "v2", Kind: helmv2.HelmReleaseKind, Namespace: ns, Name: "web"},
		}}
	})

	r := plumb("tree", "helmrelease", "web", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(Equal([]string{
		"HelmRelease/" + ns + "/web  Ready=True released podinfo 1.2.3",
		"├── ConfigMap/" + ns + "/chart-cfg  Healthy: exists",
		"└── Secret/" + ns + "/gone  Missing: object does not exist",
	}))

	t.Run("a Kustomization's tree descends into its HelmReleases", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("tree", "ks", "infra", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		got := lines(r.out)
		want := []string{
			"Kustomization/" + ns + "/infra  Ready=True applied",
			"├── ConfigMap/" + ns + "/cfg  Healthy",
			"└── HelmRelease/" + ns + "/web  ",
			"    ├── ConfigMap/" + ns + "/chart-cfg  Healthy",
			"    └── Secret/" + ns + "/gone  Missing",
		}
		g.Expect(got).To(HaveLen(len(want)), r.String())
		for i := range want {
			g.Expect(strings.HasPrefix(got[i], want[i])).To(BeTrue(), "line %d: %q does not start with %q", i, got[i], want[i])
		}
	})
}

func TestTraceHelmReleaseObject(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := helmRepo(ns, "podinfo")
	chart := helmChart(ns, ns+"-web", "podinfo", "podinfo")
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-settings",
		Labels: map[string]string{helmv2.NameLabel: "web", helmv2.NamespaceLabel: ns}}}
	create(ctx, t, repo, chart, hr, cm)
	setStatus(ctx, t, chart, func(o *sourcev1.HelmChart) { o.Status.Artifact = artifact("1.2.3") })
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.LastAppliedRevision = "1.2.3"
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-settings"}}}
	})
	r := plumb("trace", "configmap", "web-settings", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(fieldOf(r.out, "Managed by")).To(Equal("HelmRelease/" + ns + "/web"))
	g.Expect(fieldOf(r.out, "In inventory")).To(Equal("yes"))
	g.Expect(fieldOf(r.out, "Release")).To(Equal(ns + "/web"))
	g.Expect(fieldOf(r.out, "Applied revision")).To(Equal("1.2.3"))
	g.Expect(fieldOf(r.out, "HelmChart")).To(Equal(ns + "/" + ns + "-web"))
	g.Expect(fieldOf(r.out, "Chart")).To(Equal("podinfo 1.x"))
	g.Expect(fieldOf(r.out, "HelmRepository")).To(Equal(ns + "/podinfo"))
	g.Expect(fieldOf(r.out, "URL")).To(Equal("https://charts.example.com/podinfo"))
}

func TestConfirmPruneHelmRelease(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	hr := helmRelease(ns, "web", "podinfo", "podinfo")
	create(ctx, t, hr)
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.ObservedGeneration = o.Generation
		a := artifact("1.2.3")
		a.Digest = heldDigestValue
		o.Status.RenderedArtifact = a
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.PruneGuardedReason,
			"prune guard: revision 1.2.3 would prune 4 of 4 objects (all of the inventory): ConfigMap/x/a. Nothing was applied or deleted; "+
				"to go ahead, confirm this render with the annotation "+kustomizev1.ConfirmPruneAnnotation+"="+heldDigestValue+
				" (plumb confirm-prune helmrelease web)", o.Generation)}
	})
	standIn(t, hr, outcome{ready: true, message: "released", revision: "1.2.3"}, writeHelmRelease)

	r := plumb("confirm-prune", "helmrelease", "web", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)[0]).To(HavePrefix("◎ prune guard: revision 1.2.3 would prune 4 of 4 objects"))
	g.Expect(lines(r.out)).To(ContainElement("► prune of render " + heldDigestValue + " confirmed for HelmRelease/" + ns + "/web"))
	g.Expect(r.out).To(HaveSuffix("✔ HelmRelease/" + ns + "/web reconciled, revision 1.2.3\n"))
	got := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.ConfirmPruneAnnotation, heldDigestValue))
}
