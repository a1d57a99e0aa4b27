package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestMain stops the shared real node (onSharedNode) once every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopSharedNode(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the shared real node: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// sharedNode is the environment with a real node that the node stories
// share, each in a namespace of its own, with kube-router enforcing
// NetworkPolicies where it can run (a namespace no policy selects is as
// open as without it), so that the policy story shares it too. The last
// of them in the package's order checks what its Stop leaves and stops it
// (nodeowned_test.go); the story of a killed node, which must own two,
// comes after it and stops it first if it still runs (startRealNode).
var sharedNode = &Shared{
	Started: func(took time.Duration) {
		fmt.Fprintf(os.Stderr, "shared real node: the environment started in %s\n", took.Round(100*time.Millisecond))
	},
	Stopped: func(took time.Duration, err error) {
		fmt.Fprintf(os.Stderr, "shared real node: the environment stopped in %s (%v)\n", took.Round(100*time.Millisecond), err)
	},
}

// onSharedNode skips a story in -short mode or where no real node can
// start, starts the shared real node if it does not run, and returns a
// context of at most timeout, the story's Gomega, the environment and a
// new namespace for the story's objects. A failed story logs the ends of
// the kubelet's and kube-proxy's logs.
func onSharedNode(t *testing.T, namespace string, timeout time.Duration) (context.Context, Gomega, *Env, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the control plane and a real node")
	}
	assets := realNodeAssets(t)
	// Its progress goes to stderr: the environment outlives the story
	// that starts it, whose log closes with it.
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sharedNode.Options = Options{
		AssetsDir: assets, Node: NodeReal, NoControllers: true,
		NetworkPolicies: PolicyEngineUnavailable(filepath.Join(root, "bin", "node")) == nil,
		Progress:        Stamped(os.Stderr, "shared real node: "),
	}
	env, release, err := sharedNode.Acquire()
	if err != nil {
		t.Fatalf("the shared real node: %v", err)
	}
	t.Cleanup(release)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			logNodeTails(t, env.Node)
		}
	})
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	// A Pod is admitted only once kube-controller-manager made the
	// namespace's default ServiceAccount.
	g.Eventually(func() error {
		return env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "default"}, &corev1.ServiceAccount{})
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	return ctx, g, env, namespace
}

func stopSharedNode() error { return sharedNode.Stop() }
