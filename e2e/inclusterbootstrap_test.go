package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
)

// bootstrapRuns counts the bootstrap story's runs in this process, naming
// each run's repository.
var bootstrapRuns atomic.Int32

// `plumb bootstrap git` on a cluster whose node really runs containers,
// against the launcher's Git server: the install is committed to Git and
// applied, Plumb's controllers run as Pods, and from then on they apply
// their own Deployments from Git. The Git server is on the bridge's
// address, a private one, so the bootstrap names it with
// --allowed-private-networks, which goes into the repository's
// kustomization and so stays in what Plumb applies to itself. Then a
// commit that changes a controller's flag rolls that controller's Pod
// over, through Plumb itself.
//
// deploy/'s NetworkPolicies are installed and enforced (kube-router), as
// in the install story, but bootstrap is not told where the API server
// is: it reads the kubernetes EndpointSlice itself, warns that the
// launcher's relay port is neither 443 nor 6443, and commits the rule for
// it with the node's DNS (--cluster-dns) into plumb-components.yaml, from
// which Plumb keeps applying its own policies. render-controller's Pod,
// rolled over after the policies are in force, still renders; a Pod of
// another namespace is refused at source-controller's artifact port.
func TestPlumbBootstrappedFromGitManagesItselfOnARealNode(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	own, plumb := startInClusterNode(ctx, t, g)
	g.Expect(own.PushPlumbImages(ctx, inClusterVersion)).To(Succeed())
	g.Expect(own.ProvideVolume(ctx, localenv.InstallNamespace, "data-nats-0", "2Gi")).To(Succeed())

	// The repository holds the cluster's applications already. The
	// environment outlives the story (go test -count=2 runs it again in
	// the same one), so each run has a repository of its own.
	repo := fmt.Sprintf("fleet-%d", bootstrapRuns.Add(1))
	g.Expect(own.Git.CreateRepo(ctx, repo)).To(Succeed())
	url := own.Git.URL(repo)
	clone, err := localenv.InitClone(ctx, url, filepath.Join(t.TempDir(), repo))
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
			"--version", inClusterVersion, allowGit, "--cluster-dns", localenv.ClusterDNS, "--timeout", "10m")
	}
	// The endpoint bootstrap finds is the one an operator reads, at the
	// launcher's relay port.
	apiServer := kubernetesEndpoints(ctx, g, own)
	began := time.Now()
	out := bootstrap()
	// From here on Plumb applies itself from Git and puts back what is
	// deleted, its own Deployments too: the next story's `plumb
	// uninstall` (go test -count=2) would wait for controllers that keep
	// coming back. Suspended at the end, Plumb leaves them to it.
	defer plumb("suspend", "kustomization", "plumb-system", "-n", localenv.InstallNamespace)
	g.Expect(out).To(ContainSubstring("committed and pushed"))
	g.Expect(out).To(ContainSubstring("◎ the API server is at " + strings.Join(apiServer, ", ") + " (EndpointSlice default/kubernetes)"))
	g.Expect(out).To(ContainSubstring("◎ warning: the API server's port at " + strings.Join(apiServer, ", ") + " is neither 443 nor 6443"))
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
	// render-controller's egress policy, applied by Plumb from Git, names
	// the API server's endpoint bootstrap read.
	egress := &networkingv1.NetworkPolicy{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: localenv.InstallNamespace, Name: "render-controller-egress"}, egress)).To(Succeed())
	g.Expect(egress.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, "plumb-system"), "applied by Plumb's own Kustomization")
	for _, ep := range apiServer {
		g.Expect(egressAllows(egress, ep)).To(BeTrue(), "render-controller-egress lets %s through:\n%v", ep, egress.Spec.Egress)
	}

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
	// render-controller was replaced: the new Pod, which met the policies
	// from its first packet, reached the API server, DNS and
	// source-controller's artifacts.
	g.Eventually(appliedFromGit(sha)).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	policiesEnforced(ctx, t, g, own)
}

// egressAllows says whether one of policy's egress rules names endpoint
// (IP:port) exactly: an ipBlock of its address alone and its TCP port.
func egressAllows(policy *networkingv1.NetworkPolicy, endpoint string) bool {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return false
	}
	for _, rule := range policy.Spec.Egress {
		to, ports := false, false
		for _, peer := range rule.To {
			if peer.IPBlock != nil && (peer.IPBlock.CIDR == host+"/32" || peer.IPBlock.CIDR == host+"/128") {
				to = true
			}
		}
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.String() == port && (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) {
				ports = true
			}
		}
		if to && ports {
			return true
		}
	}
	return false
}
