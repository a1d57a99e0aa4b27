package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// outcome is what a stand-in controller reports for a handled request.
type outcome struct {
	ready    bool
	message  string
	revision string
}

// standIn plays a controller in the test: each time the requestedAt
// annotation of obj takes a new value it reports Reconciling=True with
// Ready=Unknown, then handles the token with the outcome, both through the
// status subresource. It stops with the test.
func standIn[T client.Object](t *testing.T, obj T, result outcome, write func(o T, token string, reconciling bool, r outcome)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		handled := ""
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			o := obj.DeepCopyObject().(T)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), o); err != nil {
				continue
			}
			token := o.GetAnnotations()[meta.ReconcileRequestAnnotation]
			if token == "" || token == handled {
				continue
			}
			for _, reconciling := range []bool{true, false} {
				for ctx.Err() == nil {
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), o); err != nil {
						continue
					}
					write(o, token, reconciling, result)
					if env.Client.Status().Update(ctx, o) == nil {
						break
					}
				}
			}
			handled = token
		}
	}()
}

// writeGitRepository sets a GitRepository's status as source-controller would.
func writeGitRepository(o *sourcev1.GitRepository, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "fetching "+o.Spec.URL, o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	status := "False"
	if r.ready {
		status = "True"
		o.Status.Artifact = artifact(r.revision)
	}
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, meta.SucceededReason, r.message, o.Generation)}
}

// writeKustomization sets a Kustomization's status as sync-controller
// would, with a sync in its Sync phase while reconciling.
func writeKustomization(o *kustomizev1.Kustomization, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Sync = &kustomizev1.SyncProgress{Phase: kustomizev1.PhaseSync, Wave: 1, Message: "waiting for Deployment/app/web"}
		o.Status.Conditions = []metav1.Condition{
			cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "applying", o.Generation),
			cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", o.Generation),
		}
		return
	}
	o.Status.LastHandledReconcileAt = token
	o.Status.Sync.Phase = kustomizev1.PhaseSucceeded
	status := "False"
	if r.ready {
		status = "True"
		o.Status.LastAppliedRevision = r.revision
	}
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, meta.SucceededReason, r.message, o.Generation)}
}

func TestReconcileSource(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "app")
	create(ctx, t, repo)
	const rev = "main@sha1:3333333333333333333333333333333333333333"
	standIn(t, repo, outcome{ready: true, message: "stored artifact", revision: rev}, writeGitRepository)

	r := plumb("reconcile", "source", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	// Whether the first read comes before the controller's first write is a
	// race; every state after it arrives through the watch, in order.
	g.Expect(withoutLine(lines(r.out), "◎ waiting for the controller to pick the request up")).To(Equal([]string{
		"► reconcile of GitRepository/" + ns + "/app requested",
		"◎ fetching https://git.example.com/org/app.git",
		"✔ GitRepository/" + ns + "/app reconciled, revision " + rev,
	}))

	// The annotation holds the token the status now reports as handled.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	g.Expect(repo.Status.LastHandledReconcileAt).To(Equal(repo.Annotations[meta.ReconcileRequestAnnotation]))

	// A second reconcile uses a new token and waits for it again.
	first := repo.Status.LastHandledReconcileAt
	r = plumb("reconcile", "gitrepository", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	g.Expect(repo.Status.LastHandledReconcileAt).NotTo(Equal(first))
}

func TestReconcileFailure(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "app")
	create(ctx, t, repo)
	standIn(t, repo, outcome{ready: false, message: "authentication required"}, writeGitRepository)

	r := plumb("reconcile", "source", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring("GitRepository/" + ns + "/app is not ready: authentication required"))
	g.Expect(r.out).NotTo(ContainSubstring("✔"))
}

// renderStandIn plays render-controller: whenever the GitRepository's
// artifact revision differs from the Kustomization's rendered one, it writes
// status.renderedArtifact with that revision and Rendered=True, or
// Rendered=False with failMessage when one is given.
func renderStandIn(t *testing.T, repo *sourcev1.GitRepository, ks *kustomizev1.Kustomization, failMessage string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			src := &sourcev1.GitRepository{}
			k := &kustomizev1.Kustomization{}
			if env.Client.Get(ctx, client.ObjectKeyFromObject(repo), src) != nil || env.Client.Get(ctx, client.ObjectKeyFromObject(ks), k) != nil {
				continue
			}
			if src.Status.Artifact == nil || (k.Status.RenderedArtifact != nil && k.Status.RenderedArtifact.Revision == src.Status.Artifact.Revision) {
				continue
			}
			if failMessage != "" {
				if c := apimeta.FindStatusCondition(k.Status.Conditions, kustomizev1.RenderedCondition); c != nil && c.Message == failMessage {
					continue
				}
				apimeta.SetStatusCondition(&k.Status.Conditions, cond(kustomizev1.RenderedCondition, "False", kustomizev1.BuildFailedReason, failMessage, k.Generation))
			} else {
				k.Status.RenderedArtifact = artifact(src.Status.Artifact.Revision)
				apimeta.SetStatusCondition(&k.Status.Conditions, cond(kustomizev1.RenderedCondition, "True", kustomizev1.RenderSucceededReason, "rendered", k.Generation))
			}
			_ = env.Client.Status().Update(ctx, k)
		}
	}()
}

func TestReconcileKustomizationWithSource(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "repo")
	ks := kustomization(ns, "app", "repo")
	create(ctx, t, repo, ks)
	const rev = "main@sha1:4444444444444444444444444444444444444444"
	standIn(t, repo, outcome{ready: true, message: "stored", revision: rev}, writeGitRepository)
	standIn(t, ks, outcome{ready: true, message: "applied", revision: rev}, writeKustomization)
	renderStandIn(t, repo, ks, "")

	r := plumb("reconcile", "ks", "app", "--with-source", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := r.out
	srcDone := strings.Index(out, "✔ GitRepository/"+ns+"/repo reconciled, revision "+rev)
	ksAsked := strings.Index(out, "► reconcile of Kustomization/"+ns+"/app requested")
	g.Expect(srcDone).To(BeNumerically(">=", 0), out)
	g.Expect(ksAsked).To(BeNumerically(">", srcDone), "the source is reconciled first:\n"+out)
	g.Expect(out).To(ContainSubstring("◎ Sync phase, wave 1: waiting for Deployment/app/web"))
	g.Expect(out).To(HaveSuffix("✔ Kustomization/" + ns + "/app reconciled, revision " + rev + "\n"))

	// The sync was asked for only once the new revision was rendered.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	g.Expect(ks.Status.RenderedArtifact.Revision).To(Equal(rev))
}

func TestReconcileWithSourceRenderFails(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "repo")
	ks := kustomization(ns, "app", "repo")
	create(ctx, t, repo, ks)
	standIn(t, repo, outcome{ready: true, message: "stored", revision: "main@sha1:9999999999999999999999999999999999999999"}, writeGitRepository)
	renderStandIn(t, repo, ks, "kustomize build failed: missing resource deployment.yaml")

	r := plumb("reconcile", "ks", "app", "--with-source", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring("rendering main@sha1:9999999999999999999999999999999999999999 failed: kustomize build failed: missing resource deployment.yaml"))
	g.Expect(r.out).NotTo(ContainSubstring("► reconcile of Kustomization"), "no sync is asked for a failed render")
}

func TestReconcileRefusals(t *testing.T) {
	ctx, ns := newNamespace(t)
	suspended := gitRepo(ns, "suspended")
	suspended.Spec.Suspend = true
	idle := gitRepo(ns, "idle")
	create(ctx, t, suspended, idle)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"suspended", []string{"reconcile", "source", "suspended"}, "is suspended: resume it first"},
		{"missing", []string{"reconcile", "source", "nothere"}, "GitRepository nothere not found in namespace " + ns},
		{"wrong kind", []string{"reconcile", "externalartifact", "x"}, `unknown kind "externalartifact"`},
		{"with-source on a source", []string{"reconcile", "source", "idle", "--with-source"}, "--with-source applies to a Kustomization"},
		// No controller answers: the wait is bounded by --timeout.
		{"no controller", []string{"reconcile", "source", "idle", "--timeout", "2s"}, "timed out waiting for GitRepository/" + ns + "/idle"},
		{"missing name", []string{"reconcile", "source"}, "want one NAME after the kind, got 0 argument(s)"},
		{"too many", []string{"reconcile", "source", "git", "a", "b"}, "want one NAME after the kind, got 2 argument(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(tc.args, "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitError), r.String())
			g.Expect(r.errOut).To(ContainSubstring(tc.want))
		})
	}
}

func TestSuspendResume(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "repo")
	create(ctx, t, ks)
	key := client.ObjectKeyFromObject(ks)

	r := plumb("suspend", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(Equal("✔ Kustomization/" + ns + "/app suspended\n"))
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeTrue())

	r = plumb("reconcile", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())

	r = plumb("resume", "kustomization", "app", "-n", ns, "--wait=false")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeFalse())
	g.Expect(ks.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation), "resuming asks for a reconcile")

	// Suspend again, then resume and wait for the reconcile it starts.
	g.Expect(plumb("suspend", "ks", "app", "-n", ns).code).To(Equal(ExitOK))
	standIn(t, ks, outcome{ready: true, message: "applied", revision: "main@sha1:5555555555555555555555555555555555555555"}, writeKustomization)
	r = plumb("resume", "ks", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(HavePrefix("► Kustomization/" + ns + "/app resumed\n"))
	g.Expect(r.out).To(HaveSuffix("reconciled, revision main@sha1:5555555555555555555555555555555555555555\n"))
}

func withoutLine(ls []string, drop string) []string {
	var out []string
	for _, l := range ls {
		if l != drop {
			out = append(out, l)
		}
	}
	return out
}
