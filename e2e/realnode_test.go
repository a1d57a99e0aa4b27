package e2e

import (
	"context"
	"fmt"
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

// realNodeDemo is a copy of the sample app running on the shared real
// node (`make run NODE=real`), Ready at the clone's head.
type realNodeDemo struct {
	ctx   context.Context
	own   *localenv.Env
	demo  *localenv.Demo
	clone *localenv.Clone
	head  string
	// key names the demo's Kustomization.
	key types.NamespacedName
}

// realNode is the environment with a real node and the controllers that
// the sample's node stories share, at the same time, each with a copy of
// the sample in namespaces of its own (docs/design/node.md, "Time in the
// tests"). It stops once no story used it for a moment, and the install
// stories, which share a node of their own (inClusterNode), stop it first.
var realNode = &localenv.Shared{
	Started: func(took time.Duration) {
		fmt.Fprintf(os.Stderr, "e2e: shared real node: the environment started in %s\n", took.Round(100*time.Millisecond))
	},
	Stopped: func(took time.Duration, err error) {
		fmt.Fprintf(os.Stderr, "e2e: shared real node: the environment stopped in %s (%v)\n", took.Round(100*time.Millisecond), err)
	},
}

// startRealNodeDemo deploys a copy of the sample, named name, on the
// shared real node (`make run NODE=real`), starting the node if no story
// did yet, and waits until it is Ready; it skips the test where no real
// node can run (not root, `make node-assets` not built, the kernel lacking
// what the pod network needs). A story that fails logs the last lines of
// the kubelet's, kube-proxy's and sync-controller's logs.
func startRealNodeDemo(t *testing.T, name string, timeout time.Duration) *realNodeDemo {
	t.Helper()
	if testing.Short() {
		t.Skip("starts its own control plane, controllers and a real node")
	}
	assets, err := localenv.RealNodeAssets()
	if err != nil {
		t.Skipf("no real node on this machine: %v", err)
	}
	// The sample stories run beside each other on the shared node, each in
	// namespaces of its own: most of their time is spent waiting — for
	// Pods, for a health wait to time out — not computing. As parallel
	// tests, they start once every other test of the package has ended.
	t.Parallel()
	// The install stories' node holds the machine's one node: this one
	// would wait for it until the package's end.
	if err := stopInClusterNode(); err != nil {
		t.Fatalf("stopping the in-cluster node: %v", err)
	}
	realNode.Options = localenv.Options{
		BinDir: filepath.Dir(plumbCLI), AssetsDir: assets, Node: localenv.NodeReal,
		// Not the story's log: the environment outlives the story.
		Progress: localenv.Stamped(os.Stderr, "e2e: shared real node: "),
	}
	own, release, err := realNode.Acquire()
	if err != nil {
		t.Fatalf("the shared real node: %v", err)
	}
	t.Cleanup(release)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- kubelet\n%s", localenv.Tail(own.Node.Kubelet.LogPath, 30))
			t.Logf("---- kube-proxy\n%s", localenv.Tail(own.Node.KubeProxy.LogPath, 30))
			t.Logf("---- sync-controller\n%s", localenv.Tail(own.Controllers[localenv.SyncController].LogPath, 30))
		}
	})
	d := &realNodeDemo{ctx: ctx, own: own}
	// As `make run NODE=real` deploys it: with the image automation,
	// whose objects are Ready against the node's registry.
	d.demo, err = own.DeployDemo(ctx, localenv.DemoOptions{Namespace: name, AppNamespace: name + "-app", Repo: name, ImageAutomation: true})
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

// stopSharedRealNode stops the shared real node's environment, if it runs.
func stopSharedRealNode() error { return realNode.Stop() }
