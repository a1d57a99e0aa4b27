package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
	"plumb.dev/pkg/testhelm"
)

// controllerRun is one controller process started for a test.
type controllerRun struct {
	name string
	log  *bytes.Buffer
	mu   *sync.Mutex
}

func (c controllerRun) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

// lockedWriter lets a process write the log while the test reads it.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// impersonatingKubeconfig writes a kubeconfig whose requests run as the
// ServiceAccount sa of plumb-system: env's admin credentials with the
// API server's impersonation headers, so the RBAC of deploy/ decides.
func impersonatingKubeconfig(t *testing.T, sa string) string {
	t.Helper()
	kc := env.Kubeconfig()
	user := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	user.Impersonate = "system:serviceaccount:" + namespace + ":" + sa
	user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startController builds a controller from this checkout and runs it as
// its ServiceAccount until the test ends, with leader election on as in
// deploy/ (its Lease in plumb-system, named by RUNTIME_NAMESPACE as the
// Deployment does).
func startController(t *testing.T, name string, args ...string) controllerRun {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", bin, "./"+name)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	run := controllerRun{name: name, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	base := append([]string{"--metrics-addr=0", "--health-addr=127.0.0.1:0", "--log-encoding=console"}, natsArgs(t, name)...)
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+impersonatingKubeconfig(t, name), "RUNTIME_NAMESPACE="+namespace)
	w := lockedWriter{mu: run.mu, b: run.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out := run.output()
			if len(out) > 6000 {
				out = out[len(out)-6000:]
			}
			t.Logf("%s log (tail):\n%s", name, out)
		}
	})
	return run
}

// freeAddr returns a 127.0.0.1 address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// forbidden finds an API call the API server refused in a controller log.
var forbidden = regexp.MustCompile(`(?i)forbidden|is not allowed to|cannot (get|list|watch|create|update|patch|delete) resource`)

// TestControllersRunWithTheirRBAC runs the five controllers, each as its
// ServiceAccount under the RBAC of deploy/, through the whole flow: a
// GitRepository with credentials from a Secret fetched from a Git server,
// a Kustomization rendered with variables from a ConfigMap and a Secret and
// applied, a HelmRelease whose HelmChart render-controller creates and
// whose values come from a Secret, rendered and applied, a Receiver whose
// webhook annotates the GitRepository, a Provider and an Alert, and an
// ImageRepository scanned with a Secret's credentials whose ImagePolicy
// reads the chosen tag's digest. Everything must become Ready, and no controller may log a
// refused call: the table in rbac_test.go is only as good as this check.
func TestControllersRunWithTheirRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the five controllers")
	}
	install(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	git, err := testgit.NewServer(testgit.Options{Username: "plumb", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer git.Close()
	repo, err := git.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.Commit("main", "app", testgit.Files{
		"deploy/kustomization.yaml": "resources:\n  - settings.yaml\n",
		"deploy/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n" +
			"data:\n  greeting: ${greeting}\n  token: ${token}\n",
	})
	g.Expect(err).NotTo(HaveOccurred())

	images, err := testhelm.NewRegistry(testhelm.RegistryOptions{Username: "plumb", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer images.Close()
	// A chart is as good an OCI artifact as an image for a tag scan.
	_, err = images.Push(testhelm.Chart{Name: "app", Version: "1.2.0"})
	g.Expect(err).NotTo(HaveOccurred())
	charts, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "plumb", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer charts.Close()
	g.Expect(charts.Add(testhelm.Chart{Name: "hello", Version: "1.0.0", Files: testhelm.Files{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  token: {{ .Values.token | default \"none\" | quote }}\n",
	}})).To(Succeed())

	sourceAddr, renderAddr, receiverAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	runs := []controllerRun{
		startController(t, "source-controller", "--storage-path="+t.TempDir(), "--storage-addr="+sourceAddr, "--allowed-private-networks=127.0.0.0/8,::1"),
		startController(t, "render-controller", "--storage-path="+t.TempDir(), "--storage-addr="+renderAddr),
		startController(t, "sync-controller"),
		startController(t, "notification-controller", "--receiver-addr="+receiverAddr, "--allow-loopback-provider-addresses"),
		startController(t, "image-controller", "--allowed-private-networks=127.0.0.0/8,::1"),
	}

	ns, err := env.Namespace(ctx, "rbac-run")
	g.Expect(err).NotTo(HaveOccurred())
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"},
			StringData: map[string]string{"username": "plumb", "password": "s3cret"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, Data: map[string]string{"greeting": "hello"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-vars"}, StringData: map[string]string{"token": "t0ken"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook"}, StringData: map[string]string{"token": "hook-token-of-at-least-32-bytes!"}},
		&sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: sourcev1.GitRepositorySpec{
				URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour},
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
				SecretRef: &meta.LocalObjectReference{Name: "git-auth"},
			},
		},
		&sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
			Spec: sourcev1.HelmRepositorySpec{
				URL: charts.URL(), Interval: metav1.Duration{Duration: time.Hour},
				SecretRef: &meta.LocalObjectReference{Name: "git-auth"},
			},
		},
		&sourcev1.HelmChart{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
			Spec: sourcev1.HelmChartSpec{
				Chart: "hello", Version: "*", Interval: metav1.Duration{Duration: time.Hour},
				SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			},
		},
		// render-controller creates its HelmChart and reads its values;
		// sync-controller applies the render.
		&helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-spec"},
			Spec: helmv2.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: "hello", Version: "*",
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
				}},
				ValuesFrom: []helmv2.ValuesReference{{Kind: "Secret", Name: "secret-vars", ValuesKey: "token", TargetPath: "token"}},
			},
		},
		// A path the commit lacks: render-controller's failure is its one
		// Kubernetes Event here (the events RBAC), a good render's
		// Rendered being on the stream only.
		&kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
				Path:      "./missing", Interval: metav1.Duration{Duration: time.Hour},
			},
		},
		&kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
				Path:      "./deploy", Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
				PostBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{
					{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "secret-vars"},
				}},
			},
		},
		// Rendered with a value from a Secret, which render-controller reads
		// by name: its RBAC forbids listing and watching Secrets.
		&helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
			Spec: helmv2.HelmReleaseSpec{
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "hello"},
				Interval: metav1.Duration{Duration: time.Hour},
				ValuesFrom: []helmv2.ValuesReference{
					{Kind: "Secret", Name: "secret-vars", ValuesKey: "token", TargetPath: "token"},
					{Kind: "ConfigMap", Name: "vars", ValuesKey: "greeting", TargetPath: "greeting"},
				},
			},
		},
		&notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "push"},
			Spec: notificationv1.ReceiverSpec{
				Type:      notificationv1.GenericReceiver,
				Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "*"}},
				SecretRef: &meta.LocalObjectReference{Name: "webhook"},
			},
		},
		&notificationv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"},
			Spec:       notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, Address: "http://" + freeAddr(t) + "/alerts"},
		},
		&notificationv1.Alert{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
			Spec: notificationv1.AlertSpec{
				ProviderRef:  meta.LocalObjectReference{Name: "hook"},
				EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: kustomizev1.KustomizationKind, Name: "*"}},
			},
		},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"` + images.Host() + `":{"username":"plumb","password":"s3cret"}}}`}},
		&imagev1.ImageRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: imagev1.ImageRepositorySpec{
				Image: images.Host() + "/" + testhelm.Repository + "/app", Interval: metav1.Duration{Duration: time.Hour},
				SecretRef: &meta.LocalObjectReference{Name: "registry"}, Insecure: true,
			},
		},
		&imagev1.ImagePolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: imagev1.ImagePolicySpec{
				ImageRepositoryRef:     meta.NamespacedObjectReference{Name: "app"},
				Policy:                 imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1"}},
				DigestReflectionPolicy: imagev1.ReflectIfNotPresent,
			},
		},
	}
	for _, o := range objs {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed(), "%T %s", o, o.GetName())
	}

	ready := func(obj interface {
		client.Object
		GetConditions() []metav1.Condition
	}) func(Gomega) {
		return func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			g.Expect(apimeta.IsStatusConditionTrue(obj.GetConditions(), meta.ReadyCondition)).To(BeTrue(),
				"%T %s: %v", obj, obj.GetName(), obj.GetConditions())
		}
	}
	gitRepo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	rcv := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "push"}}
	for _, obj := range []interface {
		client.Object
		GetConditions() []metav1.Condition
	}{
		gitRepo, ks, rcv,
		&notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}},
		&notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}},
		&sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}},
		&sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}},
		&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}},
		&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-spec"}},
		&imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
		&imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
	} {
		g.Eventually(ready(obj), 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	}

	// The HelmRelease renders, its values read from a Secret and a
	// ConfigMap (sync-controller's Ready is not asked for here).
	g.Eventually(func(g Gomega) {
		var hr helmv2.HelmRelease
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, &hr)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, kustomizev1.RenderedCondition)).To(BeTrue(), "%v", hr.Status.Conditions)
		g.Expect(hr.Status.RenderedArtifact).NotTo(BeNil())
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())

	// The rendered ConfigMap, with variables from the ConfigMap and Secret.
	var settings corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &settings)).To(Succeed())
	g.Expect(settings.Data).To(Equal(map[string]string{"greeting": "hello", "token": "t0ken"}))
	// The ConfigMap of the HelmRelease of spec.chart (its HelmChart made
	// by render-controller), with its value from the Secret, applied by
	// sync-controller.
	var fromSpec corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-spec"}, &fromSpec)).To(Succeed())
	g.Expect(fromSpec.Data).To(Equal(map[string]string{"token": "t0ken"}))

	// A webhook call: notification-controller lists the GitRepositories and
	// annotates them, then source-controller handles the request.
	// The receiver finds paths in its watch cache, which learns of the
	// Ready Receiver a moment after the API server does: retry a 404 as a
	// Git host retries a failed delivery.
	g.Eventually(func() (int, error) {
		resp, err := http.Post("http://"+receiverAddr+rcv.Status.WebhookPath, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, 250*time.Millisecond).Should(Equal(http.StatusOK))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gitRepo), gitRepo)).To(Succeed())
		token := gitRepo.Annotations[meta.ReconcileRequestAnnotation]
		g.Expect(token).NotTo(BeEmpty())
		g.Expect(gitRepo.Status.LastHandledReconcileAt).To(Equal(token))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())

	// Kubernetes Events were recorded (the events RBAC): render-controller's
	// of the broken Kustomization's failed render, a Warning.
	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		sources := map[string]bool{}
		for _, e := range list.Items {
			sources[e.Source.Component+e.ReportingController] = true
			if e.InvolvedObject.Name == "broken" {
				g.Expect(e.Type).To(Equal(corev1.EventTypeWarning), "%s %s: %s", e.Type, e.Reason, e.Message)
			}
		}
		g.Expect(fmt.Sprint(sources)).To(And(ContainSubstring("source-controller"), ContainSubstring("render-controller")))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	// The first sync of the Kustomization that became Ready is one
	// Kubernetes Event, sync-controller's Applied (docs/design/events.md).
	var list corev1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var onApp []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kustomizev1.KustomizationKind && e.InvolvedObject.Name == "app" {
			onApp = append(onApp, e.Type+" "+e.Reason+" "+e.ReportingController)
		}
	}
	g.Expect(onApp).To(Equal([]string{corev1.EventTypeNormal + " " + kustomizev1.AppliedReason + " sync-controller"}))

	// Each controller leads through its own Lease (the leader-election RBAC).
	var leases coordinationv1.LeaseList
	g.Expect(env.Client.List(ctx, &leases, client.InNamespace(namespace))).To(Succeed())
	holders := map[string]bool{}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			holders[l.Name] = true
		}
	}
	g.Expect(holders).To(HaveLen(len(runs)), "one held Lease per controller in %s", namespace)

	for _, run := range runs {
		if m := forbidden.FindString(run.output()); m != "" {
			t.Errorf("%s logged a refused API call (%q): its RBAC in deploy/%s/rbac.yaml misses something", run.name, m, run.name)
		}
	}
}
