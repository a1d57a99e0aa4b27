package opsview_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/internal/podtest"
	"plumb.dev/ui/server"
	"plumb.dev/ui/server/viewtest"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

func TestTheBrowserReadsAPodsLogAndActsOnWorkloadsWithTheUsersRights(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "ops")
	g.Expect(err).NotTo(HaveOccurred())
	node, _ := podtest.StandInKubelet(t, env.Client, ns)
	podtest.App(t, env.Client, ns, node)

	read := []rbacv1.PolicyRule{
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{sourcev1.GroupVersion.Group}, Resources: []string{"gitrepositories", "ocirepositories"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list"}},
	}
	ops := viewtest.Token(t, env.Client, ns, "ops", append(read,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"patch"}}))
	viewer := viewtest.Token(t, env.Client, ns, "viewer", read)

	_, base := viewtest.Start(t, server.Options{Auth: server.AuthToken, InsecureCookies: true, Config: env.Config,
		NATS: options.NATS{URL: env.NATSURL, Stream: "PLUMB_UI_OPS"}})
	app := base + "/#/k/kustomization/" + ns + "/app"

	b := browsertest.Start(t)
	viewtest.SignIn(b, base, ops)
	// The tree's Pod opens its log: the last lines of its container.
	b.Go(app+"/pod/"+ns+"/web-5d8f-x1", "#log-container")
	b.Eventually("the log shows the container's last lines",
		`document.querySelector('#log').textContent.endsWith('line 500 of app\n') && document.querySelector('#log').textContent.split('\n').length === 101`)
	b.Eventually("the containers are offered, init first", `[...document.querySelectorAll('#log-container option')].map((o) => o.value).join(',') === 'init,app'`)
	b.Screenshot("pod-logs")
	b.SetValue("#log-container", "init")
	b.Click("#log-previous")
	b.SetValue("#log-tail", "2")
	b.Click("#log-show")
	b.Eventually("the previous init container's last two lines",
		`document.querySelector('#log').textContent === 'previous 499 of init\nprevious 500 of init\n'`)
	b.Click("#log-previous")
	b.Click("#log-follow")
	b.Click("#log-show")
	b.Eventually("a follow streams what comes", `document.querySelector('#log').textContent.endsWith('followed\n')`)
	b.Eventually("while it is open", `document.querySelector('#log-state').textContent === 'Following…' && !document.querySelector('#log-stop').hidden`)
	b.Click("#log-stop")
	b.Eventually("Stop ends it", `document.querySelector('#log-state').textContent === 'Stopped.'`)

	// The Deployment's page: restart and scale, with what Plumb will do.
	b.Go(app+"/o/"+"apps%2FDeployment%2F"+ns+"%2Fweb", "#act-restart")
	b.Click("#act-restart")
	b.Eventually("the restart is done", `document.querySelector('#workload-result').textContent === 'Deployment `+ns+`/web restarted'`)
	b.Eventually("and Plumb keeps it", `document.querySelector('#workload-note').textContent.startsWith('Plumb keeps a restart')`)
	b.SetValue("#scale-replicas", "3")
	b.Click("#act-scale")
	b.Eventually("the scale is done", `document.querySelector('#workload-result').textContent === 'Deployment `+ns+`/web scaled to 3'`)
	b.Eventually("and says it is reverted if Git sets replicas", `document.querySelector('#workload-note').textContent.includes('If Git sets spec.replicas')`)
	b.Screenshot("workload-actions")
	web := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web)).To(Succeed())
	g.Expect(*web.Spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(web.Spec.Template.Annotations).To(HaveKey("kubectl.kubernetes.io/restartedAt"))

	// The viewer: the log and the actions are refused, and the page says so.
	b.Click("#signout")
	b.WaitVisible("#token")
	viewtest.SignIn(b, base, viewer)
	b.Go(app+"/pod/"+ns+"/web-5d8f-x1", "#log-container")
	b.Eventually("the log is not allowed", `document.querySelector('#log-state').textContent.startsWith('Reading this log is not allowed')`)
	b.Click("#act-delete-pod")
	b.Click("#act-delete-pod")
	b.Eventually("nor is deleting the Pod", `document.querySelector('#action-result').textContent === 'Delete: not allowed'`)
	b.Go(app+"/o/"+"apps%2FDeployment%2F"+ns+"%2Fweb", "#act-restart")
	b.Click("#act-restart")
	b.Eventually("nor a restart", `document.querySelector('#workload-result').textContent === 'Restart: not allowed'`)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-5d8f-x1"}, &corev1.Pod{})).To(Succeed())
}

// An OCIRepository's page: its artifact, where it comes from and how it
// is verified, and the Kustomization and HelmRelease built from it.
func TestTheBrowserShowsAnOCIRepositoryAndWhatUsesIt(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "oci")
	g.Expect(err).NotTo(HaveOccurred())
	hour := metav1.Duration{Duration: time.Hour}
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manifests"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.test/org/manifests", Interval: hour,
			Reference: &sourcev1.OCIRepositoryRef{SemVer: "1.x"},
			Verify:    &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: meta.LocalObjectReference{Name: "cosign-keys"}}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "manifests"},
			Interval: hour, Prune: true}}
	other := ks.DeepCopy()
	other.Name, other.Spec.SourceRef = "other", kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "manifests"}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart"},
		Spec: helmv2.HelmReleaseSpec{Interval: hour, ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "manifests"}}}
	for _, o := range []client.Object{repo, ks, other, hr} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	now := metav1.Now()
	testenv.SetStatus(ctx, t, env.Client, repo, func(o *sourcev1.OCIRepository) {
		o.Status.Conditions = []metav1.Condition{
			{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "stored artifact for digest '1.4.2@sha256:4f1e'", LastTransitionTime: now},
			{Type: sourcev1.SourceVerifiedCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "verified signature of revision 1.4.2@sha256:4f1e", LastTransitionTime: now}}
		o.Status.Artifact = &meta.Artifact{Path: "ocirepository/" + ns + "/manifests/4f1e.tar.gz", URL: "http://source-controller/ocirepository/" + ns + "/manifests/4f1e.tar.gz",
			Revision: "1.4.2@sha256:4f1e8a9c0d7b6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f", Digest: "sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
			Size: ptr.To[int64](48213), LastUpdateTime: now}
	})

	ui, base := viewtest.Start(t, server.Options{Auth: server.AuthKubeconfig, Config: env.Config,
		NATS: options.NATS{URL: env.NATSURL, Stream: "PLUMB_UI_OCI"}})
	b := browsertest.Start(t)
	b.Go(ui.LoginURL()+"&kind=OCIRepository&namespace="+ns, ".overview-list .vrow:not(.loading)")
	b.Go(base+"/#/k/ocirepository/"+ns+"/manifests", ".artifact-revision")
	b.Eventually("the artifact's revision", `document.querySelector('.artifact-revision').textContent.startsWith('1.4.2@sha256:4f1e8a9c')`)
	b.Eventually("where it comes from and how it is verified", `(() => { const t = document.querySelector('#verification-facts').textContent;
		return t.includes('oci://registry.test/org/manifests') && t.includes('semver 1.x') && t.includes('cosign') && t.includes('Verified'); })()`)
	b.Eventually("the Kustomization and the HelmRelease built from it, and not the other",
		`(() => { const t = document.querySelector('#used-by').textContent; return t.includes('Kustomization') && t.includes('/web') && t.includes('HelmRelease') && t.includes('/chart') && !t.includes('/other'); })()`)
	b.Screenshot("oci-repository")
}
