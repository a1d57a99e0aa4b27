package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh/knownhosts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/testgit"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/egress"
)

// strictShard labels the sources startStrictShard reconciles.
const strictShard = "strict-addresses"

// startStrictShard runs a reconciler of every kind for the sources
// labelled with strictShard, under the address policy of a
// source-controller whose --allowed-private-networks lists 127.0.0.1
// alone: the tests' allowed servers listen there, and every other
// loopback address (127.0.0.2, where the refused ones listen) is refused
// as a default install refuses every loopback and private address.
func startStrictShard(t *testing.T) {
	t.Helper()
	storage, err := artifact.NewStorage(t.TempDir(), "127.0.0.1:1", 2)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := app.NewManager(ControllerName, env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: "0", Concurrent: 2, WatchLabelSelector: meta.ShardKeyLabel + " in (" + strictShard + ")",
	}, &sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{}, &sourcev1.Bucket{})
	if err != nil {
		t.Fatal(err)
	}
	policy := egress.Policy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	recorder := events.NewRecorder(mgr.GetEventRecorder(ControllerName), nil, env.Scheme, ControllerName)
	// The suite's main instance runs controllers of the same names in
	// this process.
	skip := true
	opts := controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &skip}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must((&GitRepositoryReconciler{Client: mgr.GetClient(), Storage: storage, Events: recorder, Metrics: NewMetrics(prometheus.NewRegistry()),
		MaxRepositorySize: maxRepositorySize, Addresses: policy}).SetupWithManager(mgr, opts))
	must((&HelmRepositoryReconciler{Client: mgr.GetClient(), Storage: storage, Events: recorder, Metrics: NewHelmRepositoryMetrics(prometheus.NewRegistry()),
		MaxIndexSize: maxIndexSize, Addresses: policy}).SetupWithManager(mgr, opts))
	must((&HelmChartReconciler{Client: mgr.GetClient(), Storage: storage, Events: recorder, Metrics: NewHelmChartMetrics(prometheus.NewRegistry()),
		MaxChartSize: maxChartSize, Addresses: policy, Packager: chartWorkers}).SetupWithManager(context.Background(), mgr, opts))
	must((&OCIRepositoryReconciler{Client: mgr.GetClient(), Storage: storage, Events: recorder, Metrics: NewOCIRepositoryMetrics(prometheus.NewRegistry()),
		MaxLayerSize: maxOCILayerSize, MaxExtractedSize: maxOCIExtractedSize, Addresses: policy}).SetupWithManager(mgr, opts))
	must((&BucketReconciler{Client: mgr.GetClient(), Storage: storage, Events: recorder, Metrics: NewBucketMetrics(prometheus.NewRegistry()),
		Limits: bucketLimits, Addresses: policy}).SetupWithManager(mgr, opts))
	testenv.StartManager(t, mgr)
}

// refusedListener listens on 127.0.0.2, which the strict shard refuses,
// and counts the connections it accepts.
func refusedListener(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	return l.Addr().String(), accepted
}

// strict labels obj for the strict shard.
func strict[T client.Object](obj T) T {
	obj.SetLabels(map[string]string{meta.ShardKeyLabel: strictShard})
	return obj
}

// waitRefused waits for obj's Ready=False with a message that holds want.
func waitRefused(t *testing.T, obj helmObject, want string) {
	t.Helper()
	waitHelmCondition(t, obj, func(g Gomega, ready *metav1.Condition) {
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring(want))
		g.Expect(ready.ObservedGeneration).To(Equal(obj.GetGeneration()))
	})
	t.Logf("%T %s: %s", obj, obj.GetName(), conditionOf(obj, meta.ReadyCondition).Message)
}

// A source on a refused address, or sent there by a server on an allowed
// one (a redirect, a chart URL of an index, the token realm of a
// registry's challenge), fails with the address and the rule in its
// Ready condition, and no connection reaches the address.
func TestSourcesOnRefusedAddressesAreNotFetched(t *testing.T) {
	startStrictShard(t)
	ns := namespace(t)
	ctx := context.Background()
	target, accepted := refusedListener(t)
	const (
		loopback = "address 127.0.0.2 refused: loopback (--allowed-private-networks allows it)"
		metadata = "address 169.254.169.254 refused: link-local (cloud metadata)"
	)

	t.Run("named in the spec", func(t *testing.T) {
		g := NewWithT(t)
		identity, _, err := testgit.NewKey()
		g.Expect(err).NotTo(HaveOccurred())
		_, hostKey, err := testgit.NewKey()
		g.Expect(err).NotTo(HaveOccurred())
		credentials(t, ns, "ssh", map[string]string{"identity": string(identity), "known_hosts": knownhosts.Line([]string{knownhosts.Normalize(target)}, hostKey.PublicKey())})
		type refused struct {
			obj  helmObject
			want string
		}
		var sources []refused
		for i, c := range []struct{ host, want string }{{target, loopback}, {"169.254.169.254", metadata}} {
			sources = append(sources,
				refused{strict(newGitRepository(ns, fmt.Sprint("git-", i), "http://"+c.host+"/app.git", nil, &sourcev1.GitRepositoryRef{Branch: "main"})), c.want},
				refused{strict(newHelmRepository(ns, fmt.Sprint("helm-", i), "http://"+c.host+"/charts", nil)), c.want},
				refused{strict(newOCIRepository(ns, fmt.Sprint("oci-", i), "oci://"+c.host+"/app", nil)), c.want},
				refused{strict(newBucket(ns, fmt.Sprint("bucket-", i), c.host, "app", nil)), c.want},
			)
		}
		sources = append(sources, refused{strict(newGitRepository(ns, "ssh", "ssh://git@"+target+"/app.git", &meta.LocalObjectReference{Name: "ssh"}, &sourcev1.GitRepositoryRef{Branch: "main"})), loopback})
		for _, s := range sources {
			g.Expect(k8s.Create(ctx, s.obj)).To(Succeed())
		}
		for _, s := range sources {
			waitRefused(t, s.obj, s.want)
		}
	})

	t.Run("Git redirect", func(t *testing.T) {
		var served atomic.Int32
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			http.Redirect(w, r, "http://"+target+r.URL.RequestURI(), http.StatusFound)
		}))
		defer redirector.Close()
		obj := strict(newGitRepository(ns, "redirected", redirector.URL+"/app.git", nil, &sourcev1.GitRepositoryRef{Branch: "main"}))
		NewWithT(t).Expect(k8s.Create(ctx, obj)).To(Succeed())
		waitRefused(t, obj, loopback)
		NewWithT(t).Expect(served.Load()).To(BeNumerically(">", 0), "the allowed server was asked first")
	})

	t.Run("chart URL of an index", func(t *testing.T) {
		g := NewWithT(t)
		repo, err := testhelm.NewRepo(testhelm.RepoOptions{BaseURL: "http://" + target})
		g.Expect(err).NotTo(HaveOccurred())
		defer repo.Close()
		g.Expect(repo.Add(configMapChart("podinfo", "1.0.0"))).To(Succeed())
		hr := strict(newHelmRepository(ns, "index-elsewhere", repo.URL(), nil))
		g.Expect(k8s.Create(ctx, hr)).To(Succeed())
		waitHelmCondition(t, hr, func(g Gomega, ready *metav1.Condition) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		})
		chart := strict(newHelmChart(ns, "index-elsewhere", "podinfo", "1.0.0", sourcev1.HelmRepositoryKind, hr.Name))
		g.Expect(k8s.Create(ctx, chart)).To(Succeed())
		waitRefused(t, chart, loopback)
	})

	t.Run("token realm", func(t *testing.T) {
		g := NewWithT(t)
		// A registry whose every answer is the challenge of a token
		// service at realm, as a registry answers GET /v2/ before a
		// token.
		var challenged atomic.Int32
		challenging := func(realm string) string {
			registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				challenged.Add(1)
				w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
				w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`",service="registry",scope="repository:app:pull"`)
				w.WriteHeader(http.StatusUnauthorized)
			}))
			t.Cleanup(registry.Close)
			return strings.TrimPrefix(registry.URL, "http://")
		}
		// go-containerregistry and oras-go refuse a realm that is a
		// loopback or private IPv4 literal on their own, but not a name
		// that resolves to one, nor an IPv4 address written as IPv6:
		// here the NAT64 address of 127.0.0.2.
		_, port, _ := net.SplitHostPort(target)
		host := challenging("http://[64:ff9b::7f00:2]:" + port + "/token")
		const nat64 = "address 127.0.0.2 (carried by IPv6 address 64:ff9b::7f00:2) refused: loopback (--allowed-private-networks allows it)"
		oci := strict(newOCIRepository(ns, "realm-elsewhere", "oci://"+host+"/app", nil))
		g.Expect(k8s.Create(ctx, oci)).To(Succeed())
		waitRefused(t, oci, nat64)

		// The Helm SDK's registry client (oras-go) for an OCI chart.
		hr := strict(newHelmRepository(ns, "realm-elsewhere", "oci://"+host+"/charts", nil))
		hr.Spec.Type = sourcev1.HelmRepositoryTypeOCI
		hr.Spec.Insecure = true
		g.Expect(k8s.Create(ctx, hr)).To(Succeed())
		chart := strict(newHelmChart(ns, "realm-elsewhere", "podinfo", "1.0.0", sourcev1.HelmRepositoryKind, hr.Name))
		g.Expect(k8s.Create(ctx, chart)).To(Succeed())
		waitRefused(t, chart, nat64)
		g.Expect(challenged.Load()).To(BeNumerically(">", 0), "the allowed registry was asked first")
	})

	NewWithT(t).Expect(accepted.Load()).To(BeZero(), "connections reached the refused address")
}

// A remote's error answer reaches the status as a short line of
// printable text, however long and whatever it holds: here text with
// ANSI escapes and control characters, 1 MiB of it, from a Git host (401,
// which go-git quotes whole), a registry (500; go-containerregistry
// quotes up to 64 KiB, so 8 KiB as well) and a chart repository (500,
// with them in its status line's reason phrase).
func TestRemoteErrorAnswersReachStatusAsAnExcerpt(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	const word = "JUNK"
	hostile := strings.Repeat("\x1b[31m"+word+"\x1b[0m\x07\r\n\x00\u202e", (1<<20)/16)
	answer := func(code, size int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, hostile[:size])
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	// A chart repository writing its own status line.
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 4096))
				_, _ = io.WriteString(c, "HTTP/1.1 500 \x1b[2J\x1b[31m"+word+"\x07\r\nContent-Length: 1000\r\n\r\n"+hostile[:1000])
			}()
		}
	}()

	objects := []helmObject{
		newGitRepository(ns, "git", answer(http.StatusUnauthorized, len(hostile)).URL+"/app.git", nil, &sourcev1.GitRepositoryRef{Branch: "main"}),
		newOCIRepository(ns, "oci", "oci://"+strings.TrimPrefix(answer(http.StatusInternalServerError, len(hostile)).URL, "http://")+"/app", nil),
		newOCIRepository(ns, "oci-8k", "oci://"+strings.TrimPrefix(answer(http.StatusInternalServerError, 8<<10).URL, "http://")+"/app", nil),
		newHelmRepository(ns, "helm", "http://"+raw.Addr().String()+"/charts", nil),
	}
	g := NewWithT(t)
	for _, obj := range objects {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	for _, obj := range objects {
		waitHelmCondition(t, obj, func(g Gomega, ready *metav1.Condition) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.ObservedGeneration).To(Equal(obj.GetGeneration()))
		})
		msg := conditionOf(obj, meta.ReadyCondition).Message
		t.Logf("%s: %s", obj.GetName(), msg)
		if n := strings.Count(msg, word) * len(word); n > message.MaxExcerptBytes {
			t.Errorf("%s: %d bytes of the answer, more than an excerpt's %d", obj.GetName(), n, message.MaxExcerptBytes)
		}
		if i := strings.IndexFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("%s: a character that is not printable at byte %d: %q", obj.GetName(), i, msg[max(0, i-20):min(len(msg), i+20)])
		}
	}
}
