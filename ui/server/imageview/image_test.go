package imageview_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/server"
	"plumb.dev/ui/server/viewtest"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

const stream = "PLUMB_UI_IMAGES"

// The browser shows an ImagePolicy's latest image in the overview and on
// its page (with the image before it and the repository's tag count),
// and on an automation's page the commit it pushed with the image it
// wrote, from the automation's event on the stream.
func TestTheBrowserShowsAPolicysLatestImageAndAnAutomationsCommit(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "images")
	g.Expect(err).NotTo(HaveOccurred())

	hour := metav1.Duration{Duration: time.Hour}
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
		Message: "ok", LastTransitionTime: metav1.Now()}}
	repo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: imagev1.ImageRepositorySpec{Image: "registry.test/web", Interval: hour}}
	pol := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "web"},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.0"}}}}
	auto := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot"},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.GitSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "config"}, Interval: hour,
			Git:    imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "Plumb Bot", Email: "bot@example.com"}}},
			Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "deploy"}}}
	for _, o := range []client.Object{repo, pol, auto} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	repo.Status.Conditions = ready
	repo.Status.LastScanResult = &imagev1.ScanResult{Revision: "sha256:0a1b", TagCount: 7, ScanTime: metav1.Now()}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())
	pol.Status.Conditions = ready
	pol.Status.LatestRef = &imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.2"}
	pol.Status.ObservedPreviousRef = &imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.1"}
	g.Expect(env.Client.Status().Update(ctx, pol)).To(Succeed())
	commit := "0123456789abcdef0123456789abcdef01234567"
	pushed := metav1.Now()
	auto.Status.Conditions = ready
	auto.Status.LastPushCommit, auto.Status.LastPushTime, auto.Status.LastAutomationRunTime = commit, &pushed, &pushed
	g.Expect(env.Client.Status().Update(ctx, auto)).To(Succeed())

	// The event image-controller records after a push: the commit, the
	// branch and the images it wrote in its metadata.
	nats := options.NATS{URL: env.NATSURL, Stream: stream, StreamMaxAge: time.Hour, StreamMaxBytes: 1 << 20, QueueSize: 10}
	pub, err := events.NewJetStreamPublisher(nats, "image-controller", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	pub.Publish(events.Event{SchemaVersion: events.SchemaVersion, ID: events.NewID(), Severity: events.SeverityInfo,
		InvolvedObject: events.ObjectReference{Kind: imagev1.ImageUpdateAutomationKind, Namespace: ns, Name: "bot"},
		Reason:         meta.SucceededReason, Message: "pushed commit '0123456' to branch 'main'\nchore: update web",
		Revision: "main@sha1:" + commit, Timestamp: pushed.Time, ReportingController: "image-controller",
		Metadata: map[string]string{"commit": commit, "branch": "main", "images": "registry.test/web:1.4.2"}})

	ui, _ := viewtest.Start(t, server.Options{Auth: server.AuthKubeconfig, Config: env.Config,
		NATS: options.NATS{URL: env.NATSURL, Stream: stream}})

	b := browsertest.Start(t)
	b.Go(ui.LoginURL()+"&kind=ImagePolicy&namespace="+ns, ".overview-list .vrow:not(.loading)")
	b.Eventually("the overview row shows the latest image",
		`[...document.querySelectorAll('.overview-list .vrow')].some((r) => r.textContent.includes('ImagePolicy') && r.textContent.includes('registry.test/web:1.4.2'))`)

	base := strings.TrimSuffix(ui.URL(), "/")
	b.Go(base+"/#/k/imagepolicy/"+ns+"/web", ".latest-image")
	b.Eventually("the policy page shows the latest image", `document.querySelector('.latest-image').textContent === 'registry.test/web:1.4.2'`)
	b.Eventually("and the one before", `document.querySelector('.previous-image').textContent === 'registry.test/web:1.4.1'`)
	b.Eventually("and the repository's tag count and the automation that selects it",
		`(() => { const t = document.querySelector('.image-facts').textContent; return t.includes('registry.test/web') && t.includes('7') && t.includes('bot'); })()`)
	b.Screenshot("image-policy")

	b.Go(base+"/#/k/imageupdateautomation/"+ns+"/bot", ".last-commit")
	b.Eventually("the automation page shows its last push", `document.querySelector('.last-commit').textContent === '0123456'`)
	b.Eventually("and the commit it made, from its event, with the image it wrote",
		`(() => { const c = document.querySelector('.commit-list .commit'); return !!c && c.textContent.includes('0123456') && c.textContent.includes('registry.test/web:1.4.2') && c.textContent.includes('main'); })()`)
	b.Screenshot("image-automation")
}
