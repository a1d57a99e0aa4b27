package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
)

func imageRepo(ns, name string) *imagev1.ImageRepository {
	return &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       imagev1.ImageRepositorySpec{Image: "ghcr.io/org/" + name, Interval: metav1.Duration{Duration: 5 * time.Minute}},
	}
}

func imagePolicy(ns, name, repo string) *imagev1.ImagePolicy {
	return &imagev1.ImagePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImagePolicySpec{
			ImageRepositoryRef: meta.NamespacedObjectReference{Name: repo},
			Policy:             imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}},
		},
	}
}

func imageUpdate(ns, name, repo string) *imagev1.ImageUpdateAutomation {
	return &imagev1.ImageUpdateAutomation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.GitSourceReference{Kind: "GitRepository", Name: repo},
			Interval:  metav1.Duration{Duration: 30 * time.Minute},
			Git:       imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "plumb", Email: "plumb@example.com"}}},
		},
	}
}

// words is each line of output with its spaces collapsed.
func words(out string) []string {
	var got []string
	for _, l := range lines(out) {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	return got
}

const pushCommit = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// `get images` prints Flux's tables, read from image-controller's status
// fields; "-" where there is nothing yet.
func TestGetImagesPrintsFluxsColumns(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo, pol, fresh, auto := imageRepo(ns, "app"), imagePolicy(ns, "app", "app"), imagePolicy(ns, "fresh", "app"), imageUpdate(ns, "flux-system", "flux-system")
	auto.Spec.Suspend = true
	create(ctx, t, repo, pol, fresh, auto)
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	setStatus(ctx, t, repo, func(o *imagev1.ImageRepository) {
		o.Status.LastScanResult = &imagev1.ScanResult{TagCount: 12, ScanTime: at, Revision: "sha256:abc"}
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "successful scan: found 12 tags", o.Generation)}
	})
	setStatus(ctx, t, pol, func(o *imagev1.ImagePolicy) {
		o.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/org/app", Tag: "1.4.2"}
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "latest image tag for ghcr.io/org/app resolved to 1.4.2", o.Generation)}
	})
	setStatus(ctx, t, auto, func(o *imagev1.ImageUpdateAutomation) {
		o.Status.LastAutomationRunTime, o.Status.LastPushTime, o.Status.LastPushCommit = &at, &at, pushCommit
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", meta.FailedReason, "push refused", o.Generation)}
	})

	r := plumb("get", "images", "all", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(words(r.out)).To(Equal([]string{
		"NAME LAST SCAN TAGS SUSPENDED READY MESSAGE",
		"imagerepository/app 2026-01-02T03:04:05Z 12 False True successful scan: found 12 tags",
		"NAME IMAGE TAG READY MESSAGE",
		"imagepolicy/app ghcr.io/org/app 1.4.2 True latest image tag for ghcr.io/org/app resolved to 1.4.2",
		"imagepolicy/fresh - - Unknown waiting to be reconciled",
		"NAME LAST RUN LAST PUSH COMMIT SUSPENDED READY MESSAGE",
		"imageupdateautomation/flux-system 2026-01-02T03:04:05Z " + pushCommit + " True False push refused",
	}))

	// One kind, as Flux spells it, with -A or with a NAME.
	r = plumb("get", "images", "update", "-A")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(words(r.out)[0]).To(Equal("NAMESPACE NAME LAST RUN LAST PUSH COMMIT SUSPENDED READY MESSAGE"))
	g.Expect(words(r.out)).To(ContainElement(ns + " flux-system 2026-01-02T03:04:05Z " + pushCommit + " True False push refused"))
	r = plumb("get", "image", "policy", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(words(r.out)).To(Equal([]string{"NAME IMAGE TAG READY MESSAGE", "app ghcr.io/org/app 1.4.2 True latest image tag for ghcr.io/org/app resolved to 1.4.2"}))

	// get all has the image tables too, and the selector filters them.
	r = plumb("get", "all", "-n", ns, "--status-selector", "ready=false")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(words(r.out)).To(Equal([]string{
		"NAME LAST RUN LAST PUSH COMMIT SUSPENDED READY MESSAGE",
		"imageupdateautomation/flux-system 2026-01-02T03:04:05Z " + pushCommit + " True False push refused",
	}))
	r = plumb("get", "images", "all", "-n", ns, "--status-selector", "ready=false")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.errOut).To(ContainSubstring("No ImagePolicies matching ready=false found in namespace " + ns))

	for _, bad := range [][]string{{"images"}, {"images", "tags"}} {
		r = plumb(append([]string{"get"}, bad...)...)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(Or(ContainSubstring("images: name the type: repository, policy, update (or all)"),
			ContainSubstring(`unknown image type "tags": use repository, policy, update (or all)`)))
	}
}

// A watch of image policies prints a row when the latest image changes,
// in the policy table's columns.
func TestGetImagePolicyWatchPrintsTheNewImage(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	pol := imagePolicy(ns, "app", "app")
	create(ctx, t, pol)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- Run(wctx, []string{"--kubeconfig", kubeconfig, "get", "images", "policy", "-n", ns, "--watch"}, out, errOut)
	}()
	g.Eventually(out.String, "30s").Should(ContainSubstring("waiting to be reconciled"))
	for _, tag := range []string{"1.4.2", "1.4.3"} {
		setStatus(ctx, t, pol, func(o *imagev1.ImagePolicy) {
			o.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/org/app", Tag: tag}
			o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "resolved", o.Generation)}
		})
		g.Eventually(out.String, "30s").Should(ContainSubstring(tag))
	}
	cancel()
	g.Expect(<-done).To(Equal(ExitOK), errOut.String())
	g.Expect(words(out.String())).To(Equal([]string{
		"NAME IMAGE TAG READY MESSAGE",
		"app - - Unknown waiting to be reconciled",
		"app ghcr.io/org/app 1.4.2 True resolved",
		"app ghcr.io/org/app 1.4.3 True resolved",
	}))
}

// inProgress are the conditions of a reconcile under way, Reconciling
// saying what it does.
func inProgress(msg string, gen int64) []metav1.Condition {
	return []metav1.Condition{
		cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, msg, gen),
		cond(meta.ReadyCondition, "Unknown", meta.ProgressingReason, "reconciliation in progress", gen),
	}
}

// writeImageRepository sets an ImageRepository's status as image-controller
// would after a scan of seven tags.
func writeImageRepository(o *imagev1.ImageRepository, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = inProgress("scanning "+o.Spec.Image, o.Generation)
		return
	}
	o.Status.LastHandledReconcileAt = token
	status := "False"
	if r.ready {
		status = "True"
		o.Status.LastScanResult = &imagev1.ScanResult{TagCount: 7, ScanTime: metav1.Now()}
	}
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, meta.SucceededReason, r.message, o.Generation)}
}

// writeImageUpdate sets an automation's status after a run: a push of
// r.revision, or none when it is empty.
func writeImageUpdate(o *imagev1.ImageUpdateAutomation, token string, reconciling bool, r outcome) {
	o.Status.ObservedGeneration = o.Generation
	if reconciling {
		o.Status.Conditions = inProgress("updating images", o.Generation)
		return
	}
	o.Status.LastHandledReconcileAt = token
	now := metav1.Now()
	o.Status.LastAutomationRunTime = &now
	if r.revision != "" {
		o.Status.LastPushCommit, o.Status.LastPushTime = r.revision, &now
	}
	o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, r.message, o.Generation)}
}

// `reconcile image repository|update` requests a reconcile as for every
// kind and says what it did: the tags found, the commit pushed.
func TestReconcileImageReportsTheScanAndThePush(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo, pushed, idle := imageRepo(ns, "app"), imageUpdate(ns, "pushed", "app"), imageUpdate(ns, "idle", "app")
	create(ctx, t, repo, pushed, idle)
	standIn(t, repo, outcome{ready: true, message: "successful scan: found 7 tags"}, writeImageRepository)
	standIn(t, pushed, outcome{ready: true, message: "pushed commit '4b825dc'", revision: pushCommit}, writeImageUpdate)
	standIn(t, idle, outcome{ready: true, message: "repository up-to-date"}, writeImageUpdate)

	r := plumb("reconcile", "image", "repository", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[0]).To(Equal("► reconcile of ImageRepository/" + ns + "/app requested"))
	g.Expect(out).To(ContainElement("◎ scanning ghcr.io/org/app"))
	g.Expect(out[len(out)-1]).To(Equal("✔ ImageRepository/" + ns + "/app reconciled, scan found 7 tags"))
	r = plumb("reconcile", "image", "update", "pushed", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(HaveSuffix("✔ ImageUpdateAutomation/" + ns + "/pushed reconciled, pushed commit " + pushCommit + "\n"))
	r = plumb("reconcile", "image", "update", "idle", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(HaveSuffix("✔ ImageUpdateAutomation/" + ns + "/idle reconciled, repository up to date, no commit pushed yet\n"))

	for args, want := range map[string]string{
		"image all app":   "name one kind, not all",
		"image tag app":   `unknown image type "tag"`,
		"image app":       `unknown image type "app"`,
		"images update":   "want one NAME after the kind",
		"imagepolicy":     "want one NAME after the kind",
		"image repo1 app": `unknown image type "repo1"`,
	} {
		r := plumb(append(append([]string{"reconcile"}, strings.Fields(args)...), "-n", ns)...)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(want), args)
	}
}

// suspend, resume, export and delete take the image words too.
func TestImageWordsWorkForEveryVerb(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo, pol, auto := imageRepo(ns, "app"), imagePolicy(ns, "app", "app"), imageUpdate(ns, "auto", "app")
	create(ctx, t, repo, pol, auto)

	r := plumb("suspend", "image", "repository", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(Equal("✔ ImageRepository/" + ns + "/app suspended\n"))
	got := &imagev1.ImageRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(got.Spec.Suspend).To(BeTrue())
	r = plumb("resume", "image", "repository", "app", "--wait=false", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(got.Spec.Suspend).To(BeFalse())
	g.Expect(got.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))

	r = plumb("export", "image", "policy", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	objs := exportedObjects(t, r.out)
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].(*imagev1.ImagePolicy).Spec.Policy.SemVer.Range).To(Equal(">=1.0.0"))
	r = plumb("export", "images", "all", "--all", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(exportedObjects(t, r.out)).To(HaveLen(3))

	r = plumb("delete", "image", "update", "auto", "--silent", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(auto), &imagev1.ImageUpdateAutomation{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// Completion offers "image", then its type words, then the names.
func TestCompletionOfImageWords(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, imagePolicy(ns, "podinfo", "podinfo"), imagePolicy(ns, "platform", "platform"))
	g.Expect(complete(t, "get", "im")).To(ContainElement("image"))
	g.Expect(complete(t, "reconcile", "image", "")).To(Equal([]string{"policy", "repository", "update"}))
	g.Expect(complete(t, "get", "images", "policy", "-n", ns, "p")).To(Equal([]string{"platform", "podinfo"}))
}
