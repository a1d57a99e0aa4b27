package e2e

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
)

// `plumb bootstrap git` on a cluster whose node really runs containers,
// against the launcher's Git server: the install is committed to Git and
// applied, Plumb's controllers run as Pods, and from then on they apply
// their own Deployments from Git. The Git server is on the bridge's
// address, a private one, so the bootstrap names it with
// --allowed-private-networks, which goes into the repository's
// kustomization and so stays in what Plumb applies to itself. Then a
// commit that changes a controller's flag rolls that controller's Pod
// over, through Plumb itself.
func TestPlumbBootstrappedFromGitManagesItselfOnARealNode(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	own, plumb := startInClusterNode(ctx, t, g, false)
	g.Expect(own.PushPlumbImages(ctx, inClusterVersion)).To(Succeed())
	g.Expect(own.ProvideVolume(ctx, localenv.InstallNamespace, "data-nats-0", "2Gi")).To(Succeed())

	// The repository holds the cluster's applications already.
	g.Expect(own.Git.CreateRepo(ctx, "fleet")).To(Succeed())
	url := own.Git.URL("fleet")
	clone, err := localenv.InitClone(ctx, url, filepath.Join(t.TempDir(), "fleet"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone.Write(map[string]string{
		"clusters/local/apps/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {greeting: hello}\n",
	})).To(Succeed())
	_, err = clone.CommitAndPush(ctx, "the cluster's apps")
	g.Expect(err).NotTo(HaveOccurred())

	gitIP, _, err := net.SplitHostPort(strings.TrimPrefix(own.Git.Address(), "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	allowGit := "--allowed-private-networks=" + gitIP + "/32"
	bootstrap := func() string {
		return plumb("bootstrap", "git", "--url", url, "--branch", "main", "--path", "clusters/local", "--allow-insecure-http",
			"--version", inClusterVersion, "--network-policy=false", allowGit, "--timeout", "10m")
	}
	began := time.Now()
	g.Expect(bootstrap()).To(ContainSubstring("committed and pushed"))
	t.Logf("plumb bootstrap git: Plumb installed and synced from Git %s after it began", time.Since(began).Round(100*time.Millisecond))

	// Plumb's Deployments are applied by its own Kustomization, from the
	// commit bootstrap pushed, and their Pods run on the node.
	g.Expect(clone.Pull(ctx)).To(Succeed())
	bootstrapped, err := clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	key := types.NamespacedName{Namespace: localenv.InstallNamespace, Name: "plumb-system"}
	appliedFromGit := func(sha string) func(g Gomega) {
		return func(g Gomega) {
			ks := &kustomizev1.Kustomization{}
			g.Expect(own.Client.Get(ctx, key, ks)).To(Succeed())
			g.Expect(ks.Status.LastAppliedRevision).To(Equal(revision(sha)))
			g.Expect(conditions.IsReady(ks)).To(BeTrue(), "Ready: %s", conditions.GetMessage(ks, meta.ReadyCondition))
		}
	}
	g.Eventually(appliedFromGit(bootstrapped)).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).
		Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	deployment := func(g Gomega, name string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: localenv.InstallNamespace, Name: name}, d)).To(Succeed())
		return d
	}
	for _, name := range localenv.ControllerNames {
		d := deployment(g, name)
		g.Expect(d.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, "plumb-system"), "%s applied by Plumb's own Kustomization", name)
		g.Expect(podReady(controllerPod(ctx, g, own, name))).To(BeTrue(), "%s's Pod", name)
	}
	g.Expect(deployment(g, localenv.SourceController).Spec.Template.Spec.Containers[0].Args).To(ContainElement(allowGit))
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "app"}, &corev1.ConfigMap{})).To(Succeed())

	// Bootstrap again with the same flags: nothing to commit.
	g.Expect(bootstrap()).To(ContainSubstring("nothing committed"))

	// A commit changes a controller's flag: render-controller's Pod rolls
	// over with it, applied by Plumb from Git.
	const flag = "--render-workers=1"
	g.Expect(deployment(g, localenv.RenderController).Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(flag))
	before := controllerPod(ctx, g, own, localenv.RenderController)
	kustomization := "clusters/local/plumb-system/kustomization.yaml"
	content, err := clone.Read(kustomization)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(content).To(HaveSuffix(allowGit+"\"\n  target:\n    kind: Deployment\n    name: ^(source-controller|image-controller|sync-controller)$\n"),
		"bootstrap's patch is the last entry of the kustomization")
	g.Expect(clone.Write(map[string]string{kustomization: content + `- patch: |
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: "` + flag + `"
  target:
    kind: Deployment
    name: render-controller
`})).To(Succeed())
	sha, err := clone.CommitAndPush(ctx, "render-controller: one render worker")
	g.Expect(err).NotTo(HaveOccurred())
	committed := time.Now()
	plumb("reconcile", "kustomization", "plumb-system", "-n", localenv.InstallNamespace, "--with-source", "--timeout", "5m")
	g.Eventually(appliedFromGit(sha)).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		d := deployment(g, localenv.RenderController)
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement(flag))
		ready, why := deploymentRolledOut(d)
		g.Expect(ready).To(BeTrue(), why)
		after := controllerPod(ctx, g, own, localenv.RenderController)
		g.Expect(after.UID).NotTo(Equal(before.UID))
		g.Expect(after.Spec.Containers[0].Args).To(ContainElement(flag))
		g.Expect(podReady(after)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	t.Logf("render-controller rolled over with %s %s after the commit", flag, time.Since(committed).Round(100*time.Millisecond))
	// Plumb's sync of itself is still Ready at that commit after its own
	// render-controller was replaced.
	g.Eventually(appliedFromGit(sha)).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}
