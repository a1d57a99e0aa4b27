package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/localenv"
)

// The first hour of a platform team: `plumb bootstrap git` commits Plumb's
// install and its sync to a repository, installs it, and Plumb then keeps
// its own Deployments equal to Git, next to the cluster's applications in
// the same path; a commit upgrades Plumb; bootstrap run again changes
// nothing; `plumb uninstall` removes Plumb and leaves the applications
// running. Uninstalling deletes Plumb's CRDs, so the story runs on a
// control plane of its own, not the one the other stories share. The
// controllers are the environment's processes; the Deployments bootstrap
// installs run as the pod simulator's Pods (no kubelet here).
func TestBootstrapManagesPlumbFromGitAndUninstallLeavesTheApps(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	own, err := localenv.Start(ctx, localenv.Options{
		BinDir:         filepath.Dir(plumbCLI),
		ControllerArgs: localenv.TenancyArgs(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() {
		if t.Failed() {
			for _, name := range localenv.ControllerNames {
				t.Logf("---- %s\n%s", name, localenv.Tail(own.Controllers[name].LogPath, 30))
			}
		}
		g.Expect(own.Stop()).To(Succeed())
	}()
	plumb := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, plumbCLI, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+own.Kubeconfig)
		out, err := cmd.CombinedOutput()
		t.Logf("$ plumb %s\n%s", strings.Join(args, " "), out)
		g.Expect(err).NotTo(HaveOccurred(), "plumb %s", strings.Join(args, " "))
		return string(out)
	}

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

	bootstrap := func(version string) string {
		return plumb("bootstrap", "git", "--url", url, "--branch", "main", "--path", "clusters/local",
			"--allow-insecure-http", "--version", version, "--network-policy=false", "--timeout", "4m")
	}
	out := bootstrap("v0.1.0")
	g.Expect(out).To(ContainSubstring("committed and pushed"))

	key := types.NamespacedName{Namespace: "plumb-system", Name: "plumb-system"}
	ks := &kustomizev1.Kustomization{}
	g.Expect(own.Client.Get(ctx, key, ks)).To(Succeed())
	g.Expect(conditions.IsReady(ks)).To(BeTrue())
	ids := inventoryIDs(ks.Status.Inventory)
	g.Expect(ids).To(ContainElements(
		"Deployment/plumb-system/sync-controller", "Deployment/plumb-system/source-controller", "ConfigMap/default/app",
	), "Plumb's own Deployments and the apps are in the one inventory")

	deployment := func(name string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: "plumb-system", Name: name}, d)).To(Succeed())
		return d
	}
	sync := deployment("sync-controller")
	g.Expect(sync.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/plumb-dev/sync-controller:v0.1.0"))
	g.Expect(sync.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, "plumb-system"), "applied by the Kustomization, not only by the install")

	app := &corev1.ConfigMap{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "app"}, app)).To(Succeed())
	appUID := app.UID

	// An upgrade is a commit: the image tag changed in Git.
	g.Expect(clone.Pull(ctx)).To(Succeed())
	components := "clusters/local/plumb-system/plumb-components.yaml"
	content, err := clone.Read(components)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(content, ":v0.1.0")).To(BeNumerically(">=", 4))
	g.Expect(clone.Write(map[string]string{components: strings.ReplaceAll(content, ":v0.1.0", ":v0.2.0")})).To(Succeed())
	sha, err := clone.CommitAndPush(ctx, "Upgrade Plumb to v0.2.0")
	g.Expect(err).NotTo(HaveOccurred())
	plumb("reconcile", "kustomization", "plumb-system", "-n", "plumb-system", "--with-source", "--timeout", "2m")
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(own.Client.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Status.LastAppliedRevision).To(Equal(revision(sha)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(deployment("sync-controller").Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/plumb-dev/sync-controller:v0.2.0"))

	// Bootstrap again as Git now says: nothing to commit.
	out = bootstrap("v0.2.0")
	g.Expect(out).To(ContainSubstring("nothing committed"))
	head, err := clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(sha))

	// Uninstall: Plumb goes, the app stays. Its first step deletes the
	// controllers' Deployments and waits for their Pods to go, which stops
	// the controllers in a cluster; here they are the environment's
	// processes, which would apply the Deployments again as drift, so
	// they stop as the Pods would.
	for _, name := range localenv.ControllerNames {
		g.Expect(own.Controllers[name].Stop(10 * time.Second)).To(Succeed())
	}
	plumb("uninstall", "--timeout", "3m")
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "app"}, app)).To(Succeed())
	g.Expect(app.UID).To(Equal(appUID), "the app was neither deleted nor recreated")
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err = own.Client.Get(ctx, types.NamespacedName{Name: "kustomizations.kustomize.plumb.dev"}, crd)
	g.Expect(apierrors.IsNotFound(err) || (err == nil && crd.GetDeletionTimestamp() != nil)).To(BeTrue(), "the CRD is gone: %v", err)
}
