package localenv

import (
	"context"
	"fmt"
	"os"
	"sync"
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

// sharedNode is the one environment with a real node that the node
// stories needing no node of their own share, each in a namespace of its
// own: a start of the control plane and the node (and its Stop) is most
// of such a story's time, and the machine runs one node at a time. The
// stories that must own theirs — what Stop leaves, a killed node,
// kube-router on — start their own (startRealNode).
var sharedNode struct {
	mu  sync.Mutex
	env *Env
	// err is why the first start failed: later stories fail at once
	// rather than each wait out a start that cannot succeed.
	err error
}

// onSharedNode skips a story in -short mode or where no real node can
// start, starts the shared real node if no story did yet, and returns a
// context of at most timeout, the story's Gomega, the environment and a
// new namespace for the story's objects. A failed story logs the ends of
// the kubelet's and kube-proxy's logs.
func onSharedNode(t *testing.T, namespace string, timeout time.Duration) (context.Context, Gomega, *Env, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the control plane and a real node")
	}
	assets := realNodeAssets(t)
	env, err := startSharedNode(t, assets)
	if err != nil {
		t.Fatalf("the shared real node: %v", err)
	}
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

func startSharedNode(t *testing.T, assets string) (*Env, error) {
	sharedNode.mu.Lock()
	defer sharedNode.mu.Unlock()
	if sharedNode.env != nil || sharedNode.err != nil {
		return sharedNode.env, sharedNode.err
	}
	began := time.Now()
	// Its progress goes to stderr: the environment outlives the story
	// that starts it, whose log closes with it.
	env, err := Start(context.Background(), Options{
		AssetsDir: assets, Node: NodeReal, NoControllers: true,
		Progress: Stamped(os.Stderr, "shared real node: "),
	})
	if err != nil {
		sharedNode.err = err
		return nil, err
	}
	t.Logf("the shared environment with a real node started in %s", time.Since(began).Round(100*time.Millisecond))
	sharedNode.env = env
	return env, nil
}

func stopSharedNode() error {
	sharedNode.mu.Lock()
	defer sharedNode.mu.Unlock()
	if sharedNode.env == nil {
		return nil
	}
	began := time.Now()
	err := sharedNode.env.Stop()
	fmt.Fprintf(os.Stderr, "shared real node: the environment stopped in %s\n", time.Since(began).Round(100*time.Millisecond))
	sharedNode.env = nil
	return err
}
