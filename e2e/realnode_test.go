package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
)

// realNodeDemo is the sample app running on a real node of its own
// (`make run NODE=real`), Ready at the clone's head.
type realNodeDemo struct {
	ctx   context.Context
	own   *localenv.Env
	demo  *localenv.Demo
	clone *localenv.Clone
	head  string
	// key names the demo's Kustomization.
	key types.NamespacedName
}

// startRealNodeDemo starts a control plane, the controllers and a real
// node, deploys the sample and waits until it is Ready; it skips the test
// where no real node can run (not root, `make node-assets` not built, the
// kernel lacking what the pod network needs). Everything stops with the
// test, the kubelet's and sync-controller's last lines logged if it failed.
func startRealNodeDemo(t *testing.T, timeout time.Duration) *realNodeDemo {
	t.Helper()
	if testing.Short() {
		t.Skip("starts its own control plane, controllers and a real node")
	}
	root, err := localenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	if err := localenv.NodeUnavailable(filepath.Join(root, "bin", "node"), assets); err != nil {
		t.Skipf("no real node on this machine: %v", err)
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	own, err := localenv.Start(ctx, localenv.Options{BinDir: filepath.Dir(plumbCLI), AssetsDir: assets, Node: localenv.NodeReal})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- kubelet\n%s", localenv.Tail(own.Node.Kubelet.LogPath, 30))
			t.Logf("---- kube-proxy\n%s", localenv.Tail(own.Node.KubeProxy.LogPath, 30))
			t.Logf("---- sync-controller\n%s", localenv.Tail(own.Controllers[localenv.SyncController].LogPath, 30))
		}
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the environment: %v", err)
		}
	})
	d := &realNodeDemo{ctx: ctx, own: own}
	// As `make run NODE=real` deploys it: with the image automation,
	// whose objects are Ready against the node's registry.
	d.demo, err = own.DeployDemo(ctx, localenv.DemoOptions{ImageAutomation: true})
	g.Expect(err).NotTo(HaveOccurred())
	d.clone, err = localenv.CloneRepo(ctx, d.demo.PushURL, filepath.Join(t.TempDir(), "demo"))
	g.Expect(err).NotTo(HaveOccurred())
	d.head, err = d.clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	d.key = types.NamespacedName{Namespace: d.demo.Namespace, Name: "demo"}
	k := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		g.Expect(own.Client.Get(ctx, d.key, k)).To(Succeed())
		g.Expect(k.Status.LastAppliedRevision).To(Equal(revision(d.head)))
		g.Expect(conditions.IsReady(k)).To(BeTrue(), "Ready: %s", conditions.GetMessage(k, meta.ReadyCondition))
	}).WithTimeout(3 * time.Minute).WithPolling(poll).Should(Succeed())
	g.Expect(own.WaitDemoReady(ctx, d.demo)).To(Succeed())
	return d
}
