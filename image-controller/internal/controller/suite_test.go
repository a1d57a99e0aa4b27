package controller

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/image-controller/internal/registry"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/testhelm"
)

// testAddresses is the reconcilers' address policy: the test registries
// listen on 127.0.0.1, so loopback is allowed as make run and the e2e
// tests allow it (--allowed-private-networks=127.0.0.0/8,::1).
var testAddresses = netguard.Policy{
	Allowed:      []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	LoopbackFlag: "--" + AllowedNetworksFlag, PrivateFlag: "--" + AllowedNetworksFlag,
}

// testLimits are the suite's --max-tags and --max-tag-pages: far above
// every test's tags but the one that tests them.
var testLimits = registry.Limits{MaxTags: 50, MaxPages: 5, MaxPageBytes: 64 << 10}

// Shared by every test of the package: one control plane and one manager
// running both reconcilers, which refuse cross-namespace references, as
// deploy/ runs them.
var (
	env *testenv.Environment
	k8s client.Client
)

const (
	timeout = 30 * time.Second
	poll    = 100 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(testenv.WithoutNATS()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client
	mgrOpts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 4}
	mgr, err := app.NewManager(ControllerName, env.Config, env.Scheme, mgrOpts, &imagev1.ImageRepository{}, &imagev1.ImagePolicy{}, &imagev1.ImageUpdateAutomation{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, options.NATS{}, ControllerName, logr.Discard())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeEvents()
	if err := Setup(mgr, Options{
		Events:               recorder,
		Connection:           Connection{Addresses: testAddresses, Limits: testLimits},
		NoCrossNamespaceRefs: true,
		RequeueDependency:    time.Second,
	}, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	return m.Run()
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.Namespace(context.Background(), "image")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func newRegistry(t *testing.T, opts testhelm.RegistryOptions) *testhelm.Registry {
	t.Helper()
	reg, err := testhelm.NewRegistry(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}

// push pushes a random image as image:tag for each tag, and returns the
// digest of each.
func push(t *testing.T, image string, auth authn.Authenticator, tags ...string) map[string]string {
	t.Helper()
	if auth == nil {
		auth = authn.Anonymous
	}
	return pushWith(t, image, []remote.Option{remote.WithAuth(auth)}, tags...)
}

// pushWith is push with go-containerregistry's options (a transport).
func pushWith(t *testing.T, image string, opts []remote.Option, tags ...string) map[string]string {
	t.Helper()
	digests := map[string]string{}
	for _, tag := range tags {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(image + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = d.String()
	}
	return digests
}

func newRepository(ns, name, image string) *imagev1.ImageRepository {
	return &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       imagev1.ImageRepositorySpec{Image: image, Interval: metav1.Duration{Duration: time.Hour}},
	}
}

// waitReady waits for obj's Ready condition of its latest generation to
// have status and reason, and returns obj as read then.
func waitReady[T interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
}](t *testing.T, obj T, status metav1.ConditionStatus, reason string) T {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(obj.GetObservedGeneration()).To(Equal(obj.GetGeneration()))
		c := readyOf(obj.GetConditions())
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return obj
}

func readyOf(cs []metav1.Condition) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == meta.ReadyCondition {
			return &cs[i]
		}
	}
	return nil
}

func dockerConfigSecret(ns, name, host, user, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"` + host + `":{"username":"` + user + `","password":"` + password + `"}}}`)},
	}
}
