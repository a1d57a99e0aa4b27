package cmd

import (
	"plumb.dev/pkg/renderworker"

	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/pkg/testenv"
)

var (
	env *testenv.Environment
	// kubeconfig is a kubeconfig file for env, as a user would have one.
	kubeconfig string
)

func TestMain(m *testing.M) {
	// plumb build renders in a worker: this test binary started again.
	renderworker.ServeIfWorker()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if fuzzing() {
		// Fuzz targets need no cluster; a control plane per fuzz worker
		// would only slow them down.
		return m.Run()
	}
	if kc := os.Getenv(childKubeconfigEnv); kc != "" {
		// A child process of a test (build_test.go), on its parent's
		// control plane.
		kubeconfig = kc
		return m.Run()
	}
	var err error
	// NATS as deploy/ runs it: TLS, client certificates and a user per role.
	if env, err = testenv.Start(testenv.WithSecureNATS()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The CLI's scheme knows the HelmRelease kind; let the tests' client
	// write it too.
	if err := helmv2.AddToScheme(env.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	dir, err := os.MkdirTemp("", "plumb-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// fuzzing reports whether this process runs fuzz targets (-test.fuzz, or
// a fuzz worker the coordinator started).
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// writeKubeconfig saves env's admin credentials as a kubeconfig file whose
// current context's namespace is "default".
func writeKubeconfig(path string) error {
	kc := env.Kubeconfig()
	kc.Contexts[kc.CurrentContext].Namespace = "default"
	return clientcmd.WriteToFile(*kc, path)
}

// result is what one run of the command line left.
type result struct {
	code        int
	out, errOut string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
}

// plumb runs the command line in-process against env.
func plumb(args ...string) result {
	return plumbCtx(context.Background(), args...)
}

func plumbCtx(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	code := Run(ctx, append([]string{"--kubeconfig", kubeconfig}, args...), &out, &errOut)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

// newNamespace gives a test its own namespace.
func newNamespace(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "cli")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, ns
}

// create creates objects or fails the test.
func create(ctx context.Context, t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// setStatus writes obj's status through the status subresource, as a
// controller would, after mutate changed the freshly read object.
func setStatus[T client.Object](ctx context.Context, t testing.TB, obj T, mutate func(T)) {
	t.Helper()
	testenv.SetStatus(ctx, t, env.Client, obj, mutate)
}

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines splits output into trimmed, non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}
