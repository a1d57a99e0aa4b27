package cmd

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// fields returns each line's whitespace-separated fields.
func fields(ls []string) [][]string {
	var out [][]string
	for _, l := range ls {
		out = append(out, strings.Fields(l))
	}
	return out
}

func TestGetSpelledAsFluxSpellsIt(t *testing.T) {
	ctx, ns := newNamespace(t)
	repo := gitRepo(ns, "app")
	ks := kustomization(ns, "app", "app")
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.SlackProvider, Channel: "general", SecretRef: &meta.LocalObjectReference{Name: "slack-url"}},
	}
	create(ctx, t, repo, ks, provider)
	setStatus(ctx, t, repo, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact("main@sha1:1111111111111111111111111111111111111111")
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored", o.Generation)}
	})

	for _, args := range [][]string{{"get", "sources", "git"}, {"get", "source", "git"}, {"get", "sources"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(args, "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			got := fields(lines(r.out))
			g.Expect(got).To(HaveLen(2), r.String())
			g.Expect(got[0]).To(Equal([]string{"NAME", "READY", "REVISION", "AGE", "MESSAGE"}))
			g.Expect(got[1][:3]).To(Equal([]string{"app", "True", "main@sha1:1111111111111111111111111111111111111111"}))
		})
	}

	t.Run("alert-providers", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "alert-providers", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(fields(lines(r.out))[1][0]).To(Equal("slack"))
	})

	t.Run("one source by name", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "sources", "git", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(fields(lines(r.out))).To(HaveLen(2))
		r = plumb("get", "sources", "git", "nothere", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("GitRepository nothere not found in namespace " + ns))
	})

	t.Run("unknown source type", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "sources", "s3", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(`unknown source type "s3": use git, helm, chart, oci, bucket`))
	})

	t.Run("get all groups every kind", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "all", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		blocks := strings.Split(strings.TrimSpace(r.out), "\n\n")
		g.Expect(blocks).To(HaveLen(3), r.String())
		for i, want := range []string{"gitrepository/app", "kustomization/app", "provider/slack"} {
			got := fields(lines(blocks[i]))
			g.Expect(got).To(HaveLen(2), blocks[i])
			g.Expect(got[0][0]).To(Equal("NAME"))
			g.Expect(got[1][0]).To(Equal(want))
		}
	})

	t.Run("get all -A has the namespace column", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "all", "-A")
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(MatchRegexp(`(?m)^` + ns + `\s+kustomization/app\s`))
	})

	t.Run("get all in an empty namespace", func(t *testing.T) {
		g := NewWithT(t)
		_, empty := newNamespace(t)
		r := plumb("get", "all", "-n", empty)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(BeEmpty())
		g.Expect(r.errOut).To(ContainSubstring("No Plumb objects found in namespace " + empty))
	})
}

func TestGetKustomizationInDetail(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	web := webDeployment(ns)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	repo := gitRepo(ns, "repo")
	ks := kustomization(ns, "app", "repo")
	ks.Spec.Path = "./deploy"
	ks.Spec.DriftPolicy = kustomizev1.DriftPolicyReport
	create(ctx, t, web, cfg, repo, ks)
	const applied = "main@sha1:2222222222222222222222222222222222222222"
	const attempted = "main@sha1:3333333333333333333333333333333333333333"
	setStatus(ctx, t, repo, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact(attempted)
	})
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.LastAppliedRevision = applied
		o.Status.LastAttemptedRevision = attempted
		o.Status.Conditions = []metav1.Condition{
			cond(kustomizev1.HealthyCondition, "False", kustomizev1.HealthCheckFailedReason, "Deployment/"+ns+"/web is progressing", o.Generation),
			cond(kustomizev1.DriftedCondition, "True", kustomizev1.DriftDetectedReason, "1 object(s) differ from Git: ConfigMap/"+ns+"/cfg:data.mode", o.Generation),
			cond(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, "health check failed after 5m", o.Generation),
		}
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"},
			{Version: "v1", Kind: "Secret", Namespace: ns, Name: "gone"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
		}}
		o.Status.Drift = &kustomizev1.DriftStatus{Count: 1, LastDetected: &metav1.Time{Time: metav1.Now().Time}, Paths: []string{"ConfigMap/" + ns + "/cfg:data.mode"}}
		o.Status.Sync = &kustomizev1.SyncProgress{Revision: attempted, Phase: kustomizev1.PhaseFailed, Wave: 2, Message: "Deployment/web did not become healthy",
			StartedAt: &metav1.Time{Time: metav1.Now().Time}, FinishedAt: &metav1.Time{Time: metav1.Now().Time}}
		o.Status.SyncWindow = &kustomizev1.SyncWindowStatus{Windows: []string{"spec.syncWindows[0]"}, HeldRevision: attempted,
			NextOpen: &metav1.Time{Time: time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)}, DriftCorrection: true}
	})

	r := plumb("get", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	got := lines(r.out)
	field := func(name string) string { return detailField(t, got, name) }
	g.Expect(field("Name")).To(Equal("app"))
	g.Expect(field("Source")).To(Equal("GitRepository/" + ns + "/repo https://git.example.com/org/repo.git at " + attempted))
	g.Expect(field("Path")).To(Equal("./deploy"))
	g.Expect(field("Applied revision")).To(Equal(applied))
	g.Expect(field("Attempted revision")).To(Equal(attempted))
	g.Expect(field("Sync status")).To(Equal("OutOfSync (1 object(s) differ from Git: ConfigMap/" + ns + "/cfg:data.mode), driftPolicy Report"))
	g.Expect(field("Sync window")).To(HavePrefix("closed by spec.syncWindows[0] until 2026-12-07T11:00:00Z"))
	g.Expect(field("Sync window")).To(HaveSuffix("holding revision " + attempted + "; drift corrected"))
	g.Expect(field("Health")).To(HavePrefix("Missing (Healthy=False HealthCheckFailed: Deployment/" + ns + "/web is progressing)"))
	g.Expect(field("Last sync result")).To(Equal("Ready=False HealthCheckFailed: health check failed after 5m"))
	g.Expect(field("Sync operation")).To(MatchRegexp(`^Failed, wave 2, revision ` + attempted + `, started \d+s ago, finished \d+s ago: Deployment/web did not become healthy$`))

	section := func(title string) [][]string { return detailSection(got, title) }
	conds := section("CONDITIONS:")
	g.Expect(conds).To(HaveLen(4), r.String())
	g.Expect(conds[0]).To(Equal([]string{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}))
	g.Expect(conds[1][:3]).To(Equal([]string{"Ready", "False", "HealthCheckFailed"}), "Ready comes first")
	g.Expect(conds[2][:3]).To(Equal([]string{"Healthy", "False", "HealthCheckFailed"}))

	objs := section("OBJECTS:")
	g.Expect(objs).To(HaveLen(4), r.String())
	g.Expect(objs[0]).To(Equal([]string{"KIND", "NAMESPACE", "NAME", "HEALTH", "DRIFT"}))
	g.Expect(objs[1]).To(Equal([]string{"ConfigMap", ns, "cfg", "Healthy:", "exists", "drifted", "data.mode"}))
	g.Expect(objs[2][:4]).To(Equal([]string{"Secret", ns, "gone", "Missing:"}))
	g.Expect(objs[2][len(objs[2])-1]).To(Equal("-"))
	g.Expect(objs[3][:4]).To(Equal([]string{"Deployment", ns, "web", "Progressing:"}))

	t.Run("synced and healthy", func(t *testing.T) {
		g := NewWithT(t)
		ok := kustomization(ns, "ok", "repo")
		create(ctx, t, ok)
		setStatus(ctx, t, ok, func(o *kustomizev1.Kustomization) {
			o.Status.LastAppliedRevision = applied
			o.Status.RenderedArtifact = artifact(applied)
			o.Status.Conditions = []metav1.Condition{
				cond(kustomizev1.HealthyCondition, "True", meta.SucceededReason, "all healthy", o.Generation),
				cond(meta.ReadyCondition, "True", meta.SucceededReason, "Applied revision "+applied, o.Generation),
			}
			o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"}}}
		})
		r := plumb("get", "ks", "ok", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(MatchRegexp(`(?m)^Sync status:\s+Synced, driftPolicy Correct$`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Sync window:\s+open$`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Health:\s+Healthy \(Healthy=True Succeeded: all healthy\)$`))
	})

	t.Run("nothing applied yet", func(t *testing.T) {
		g := NewWithT(t)
		create(ctx, t, kustomization(ns, "fresh", "missing"))
		r := plumb("get", "kustomization", "fresh", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(MatchRegexp(`(?m)^Source:\s+GitRepository/` + ns + `/missing \(GitRepository missing not found`))
		g.Expect(r.out).To(MatchRegexp(`(?m)^Sync status:\s+Unknown \(nothing applied yet\)`))
		g.Expect(r.out).To(ContainSubstring("OBJECTS:\n(no objects applied yet)"))
	})

	t.Run("not found", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "kustomization", "nothere", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("Kustomization nothere not found"))
	})
}

// detailField is the value of the field "name:" in the lines of a
// describe output; the test fails when there is none.
func detailField(t *testing.T, got []string, name string) string {
	t.Helper()
	for _, l := range got {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no field %s in\n%s", name, strings.Join(got, "\n"))
	return ""
}

// detailSection is the rows, split into fields, of the section title
// ("HISTORY:") of a describe output, up to the next section.
func detailSection(got []string, title string) [][]string {
	var out [][]string
	in := false
	for _, l := range got {
		switch {
		case l == title:
			in = true
		case strings.HasSuffix(l, ":") && !strings.Contains(l, " "):
			in = false
		case in:
			out = append(out, strings.Fields(l))
		}
	}
	return out
}
