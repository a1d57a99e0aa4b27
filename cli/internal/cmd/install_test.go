package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/cli/internal/install"
	"plumb.dev/pkg/testenv"
)

// privateCluster starts a control plane of the test's own, for commands
// that install and delete Plumb's CRDs, which the package's shared one
// must keep. It returns the environment and a kubeconfig file for it.
func privateCluster(t *testing.T) (*testenv.Environment, string) {
	t.Helper()
	e, err := testenv.Start(testenv.WithoutNATS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Log(err)
		}
	})
	kc := e.Kubeconfig()
	kc.Contexts[kc.CurrentContext].Namespace = "default"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return e, path
}

// plumbOn runs the command line against the cluster of kubeconfig.
func plumbOn(ctx context.Context, kubeconfig string, args ...string) result {
	var out, errOut bytes.Buffer
	code := Run(ctx, append([]string{"--kubeconfig", kubeconfig}, args...), &out, &errOut)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

// rollOut plays the Deployment controller and the kubelet, which the test
// cluster lacks: it marks every Deployment in plumb-system rolled out at
// its generation, until ctx ends.
func rollOut(ctx context.Context, c client.Client) {
	for ctx.Err() == nil {
		var deps appsv1.DeploymentList
		if err := c.List(ctx, &deps, client.InNamespace(install.Namespace)); err == nil {
			for i := range deps.Items {
				d := &deps.Items[i]
				if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 1 {
					continue
				}
				d.Status.ObservedGeneration = d.Generation
				d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1, 1
				_ = c.Status().Update(ctx, d)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mustBeGone fails unless reading obj answers NotFound (another error is
// a failure too, not a pass).
func mustBeGone(ctx context.Context, t *testing.T, c client.Client, obj client.Object, key types.NamespacedName) {
	t.Helper()
	err := c.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		t.Errorf("%T %s: want NotFound, got %v", obj, key, err)
	}
}

func TestInstallAppliesTheChosenRenderCreatesTheSecretOnceAndWaitsForTheControllers(t *testing.T) {
	e, kc := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go rollOut(ctx, e.Client) // until the test's cancel

	args := []string{"install", "--timeout=2m",
		"--components=source-controller,sync-controller", "--components-extra=ui",
		"--registry=registry.example:5000/mirror", "--version=v9.9.9",
		"--network-policy=false", "--watch-all-namespaces=false"}
	r := plumbOn(ctx, kc, args...)
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{
		"✔ CRDs established",
		"✚ Secret/plumb-system/nats-credentials created",
		"✔ source-controller: 1/1 ready",
		"✔ sync-controller: 1/1 ready",
		"✔ ui: 1/1 ready",
		"✔ install finished",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}

	c := e.Client
	for _, name := range []string{"source-controller", "sync-controller", "ui"} {
		var d appsv1.Deployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: name}, &d); err != nil {
			t.Fatal(err)
		}
		ct := d.Spec.Template.Spec.Containers[0]
		if want := "registry.example:5000/mirror/" + name + ":v9.9.9"; ct.Image != want {
			t.Errorf("%s image = %s, want %s", name, ct.Image, want)
		}
		if name != "ui" && !slices.Contains(ct.Args, "--watch-all-namespaces=false") {
			t.Errorf("%s args lack --watch-all-namespaces=false: %v", name, ct.Args)
		}
		if d.ManagedFields[0].Manager != install.FieldManager {
			t.Errorf("%s is managed by %s, want %s", name, d.ManagedFields[0].Manager, install.FieldManager)
		}
	}
	for _, name := range []string{"render-controller", "notification-controller"} {
		mustBeGone(ctx, t, c, &appsv1.Deployment{}, types.NamespacedName{Namespace: install.Namespace, Name: name})
	}
	var policies networkingv1.NetworkPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(install.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) != 0 {
		t.Errorf("%d NetworkPolicies installed with --network-policy=false", len(policies.Items))
	}
	if strings.Contains(r.out+r.errOut, "EndpointSlice") {
		t.Errorf("the EndpointSlice was read for policies that are not installed:\n%s", r)
	}
	var nats appsv1.StatefulSet
	if err := c.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: "nats"}, &nats); err != nil {
		t.Fatal(err)
	}
	if img := nats.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "registry.example:5000/mirror/nats:") {
		t.Errorf("nats image = %s, want it from the private registry", img)
	}

	var secret corev1.Secret
	key := types.NamespacedName{Namespace: install.Namespace, Name: install.NATSCredentials}
	if err := c.Get(ctx, key, &secret); err != nil {
		t.Fatal(err)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, user := range []string{"publisher", "notification", "reader", "alerts"} {
		if !hex64.Match(secret.Data[user]) {
			t.Errorf("password of %s = %q, want 64 hex characters", user, secret.Data[user])
		}
	}
	if string(secret.Data["publisher"]) == string(secret.Data["reader"]) {
		t.Error("two users share a password")
	}

	// Again: the Secret is kept as it is, passwords and all.
	r = plumbOn(ctx, kc, args...)
	if r.code != 0 {
		t.Fatal(r)
	}
	if !strings.Contains(r.out, "◎ Secret/plumb-system/nats-credentials exists: its passwords are kept") {
		t.Errorf("the second install does not say it kept the Secret:\n%s", r.out)
	}
	var again corev1.Secret
	if err := c.Get(ctx, key, &again); err != nil {
		t.Fatal(err)
	}
	if again.UID != secret.UID || again.ResourceVersion != secret.ResourceVersion {
		t.Errorf("the second install replaced or changed the Secret (uid %s → %s, resourceVersion %s → %s)",
			secret.UID, again.UID, secret.ResourceVersion, again.ResourceVersion)
	}
}

func TestInstallWaitsUntilTheControllersAreReadyAndSaysWhichAreNot(t *testing.T) {
	e, kc := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Nobody rolls the Deployments out: the install waits, then fails
	// naming them.
	r := plumbOn(ctx, kc, "install", "--timeout=8s", "--components=sync-controller")
	if r.code != ExitError {
		t.Fatalf("want exit %d:\n%s", ExitError, r)
	}
	if !strings.Contains(r.out, "◎ sync-controller: generation 1 not yet observed by the Deployment controller") ||
		!strings.Contains(r.errOut, "not ready: sync-controller") {
		t.Errorf("the wait does not say what it waits for:\n%s", r)
	}
	// What was applied stays: the install is not rolled back.
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: "sync-controller"}, &appsv1.Deployment{}); err != nil {
		t.Error(err)
	}
}

func TestInstallExportPrintsTheManifestsAndTouchesNoCluster(t *testing.T) {
	// An unreachable kubeconfig: --export must not need one.
	r := plumbOn(context.Background(), filepath.Join(t.TempDir(), "missing"), "install", "--export",
		"--components=source-controller,render-controller", "--version=v1.2.3")
	if r.code != 0 {
		t.Fatal(r)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(r.out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the export is not YAML: %v", err)
		}
		objs = append(objs, u)
	}
	var deployments []string
	crds, policies := 0, 0
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			deployments = append(deployments, u.GetName())
			img, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			if got := img[0].(map[string]any)["image"]; got != "ghcr.io/plumb-dev/"+u.GetName()+":v1.2.3" {
				t.Errorf("%s image = %v", u.GetName(), got)
			}
		case "CustomResourceDefinition":
			crds++
		case "NetworkPolicy":
			policies++
		case "Secret":
			t.Errorf("the export holds Secret %s: passwords must never be printed", u.GetName())
		}
	}
	slices.Sort(deployments)
	if !slices.Equal(deployments, []string{"render-controller", "source-controller"}) {
		t.Errorf("Deployments = %v", deployments)
	}
	if crds < 12 || policies == 0 {
		t.Errorf("%d CRDs and %d NetworkPolicies exported", crds, policies)
	}
}

func TestCheckPreSaysWhatTheInstallNeedsAndWhatIsDenied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := plumbCtx(ctx, "check", "--pre")
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{
		"✔ Kubernetes v1.",
		"✔ create, patch customresourcedefinitions.apiextensions.k8s.io cluster-wide",
		"✔ create, patch clusterrolebindings.rbac.authorization.k8s.io cluster-wide",
		"✔ create, patch deployments.apps in plumb-system",
		"✔ get, create secrets in plumb-system",
		"✔ grant cluster-admin (plumb-sync-controller-cluster-admin)",
		"✔ prerequisites checks passed",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	// A user with no rights at all.
	r = plumbCtx(ctx, "check", "--pre", "--as=nobody@example.com")
	if r.code != ExitNegative {
		t.Fatalf("want exit %d:\n%s", ExitNegative, r)
	}
	if !strings.Contains(r.out, "✗ create, patch customresourcedefinitions.apiextensions.k8s.io cluster-wide: denied") ||
		!strings.Contains(r.out, "✗ create, patch deployments.apps in plumb-system: denied") ||
		!strings.Contains(r.out, "✗ grant cluster-admin (plumb-sync-controller-cluster-admin): denied") {
		t.Errorf("the denials are not listed:\n%s", r.out)
	}
}

// endpointsOfKubernetes are the API server's IP:port pairs as the
// `kubernetes` Service's Endpoints name them: the API server writes them
// beside its EndpointSlice, so they check the CLI's reading of the slice
// from another object.
func endpointsOfKubernetes(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	//lint:ignore SA1019 the legacy object on purpose: not what the CLI reads
	var endpoints corev1.Endpoints
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kubernetes"}, &endpoints); err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, subset := range endpoints.Subsets {
		for _, a := range subset.Addresses {
			for _, p := range subset.Ports {
				eps = append(eps, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	if len(eps) == 0 {
		t.Fatal("the kubernetes Endpoints name no endpoint")
	}
	slices.Sort(eps)
	return eps
}

// egressTo are the endpoints (IP:port) that the egress rules of the
// NetworkPolicy name exactly: an ipBlock of one address and a TCP port.
func egressTo(ctx context.Context, t *testing.T, c client.Client, name string) []string {
	t.Helper()
	var policy networkingv1.NetworkPolicy
	if err := c.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: name}, &policy); err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, rule := range policy.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock == nil {
				continue
			}
			prefix, err := netip.ParsePrefix(peer.IPBlock.CIDR)
			if err != nil || !prefix.IsSingleIP() {
				continue
			}
			for _, p := range rule.Ports {
				if p.Port != nil && (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) {
					eps = append(eps, net.JoinHostPort(prefix.Addr().String(), p.Port.String()))
				}
			}
		}
	}
	slices.Sort(eps)
	return eps
}

// With the NetworkPolicies on and no --api-server-endpoints, install reads
// the API server's endpoint from the kubernetes EndpointSlice and gives
// render-controller's and the UI's egress a rule for it, warning that its
// port (envtest's, random) is neither 443 nor 6443; the flag overrides
// the slice, and given empty adds no rule.
func TestInstallOpensTheEgressToTheAPIServerOfTheKubernetesEndpointSlice(t *testing.T) {
	e, kc := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	go rollOut(ctx, e.Client) // until the test's cancel
	c := e.Client
	want := endpointsOfKubernetes(ctx, t, c)
	args := []string{"install", "--timeout=2m", "--components=render-controller", "--components-extra=ui"}
	policies := []string{"render-controller-egress", "ui-egress"}

	r := plumbOn(ctx, kc, args...)
	if r.code != 0 {
		t.Fatal(r)
	}
	if line := "◎ the API server is at " + strings.Join(want, ", ") + " (EndpointSlice default/kubernetes)"; !strings.Contains(r.out, line) {
		t.Errorf("output lacks %q:\n%s", line, r)
	}
	warning := "◎ warning: the API server's port at " + strings.Join(want, ", ") + " is neither 443 nor 6443"
	off := install.OffPolicyPorts(want)
	if printed := strings.Contains(r.errOut, warning); printed != (len(off) > 0) {
		t.Errorf("endpoints off 443 and 6443: %v, and the warning %q printed: %t\n%s", off, warning, printed, r)
	}
	for _, name := range policies {
		if got := egressTo(ctx, t, c, name); !slices.Equal(got, want) {
			t.Errorf("%s names the endpoints %v, want the slice's %v", name, got, want)
		}
	}

	// The flag wins: the slice is not read, and its endpoint leaves the
	// policies (the egress list is replaced as a whole).
	const given = "172.31.0.9:8443"
	r = plumbOn(ctx, kc, append(args, "--api-server-endpoints="+given)...)
	if r.code != 0 {
		t.Fatal(r)
	}
	if strings.Contains(r.out+r.errOut, "EndpointSlice") {
		t.Errorf("the slice was read although --api-server-endpoints was given:\n%s", r)
	}
	for _, name := range policies {
		if got := egressTo(ctx, t, c, name); !slices.Equal(got, []string{given}) {
			t.Errorf("%s names the endpoints %v, want the flag's %s alone", name, got, given)
		}
	}

	// Given empty: deploy/'s rules alone.
	r = plumbOn(ctx, kc, append(args, "--api-server-endpoints=")...)
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, name := range policies {
		if got := egressTo(ctx, t, c, name); len(got) != 0 {
			t.Errorf("%s names the endpoints %v, want none with --api-server-endpoints=", name, got)
		}
	}
}

// A user who may not read the EndpointSlice is told in one line, and the
// install goes on to apply (which this user may not either).
func TestInstallThatMayNotReadTheEndpointSliceSaysSoAndGoesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := plumbCtx(ctx, "install", "--timeout=20s", "--as=nobody@example.com")
	if r.code == 0 {
		t.Fatalf("a user with no rights installed:\n%s", r)
	}
	const warning = `◎ warning: reading EndpointSlice default/kubernetes: endpointslices.discovery.k8s.io "kubernetes" is forbidden`
	if !strings.Contains(r.errOut, warning) || !strings.Contains(r.errOut, "name it with --api-server-endpoints") {
		t.Errorf("the refused read is not said as %q:\n%s", warning, r)
	}
	if !strings.Contains(r.out, "► installing Plumb") {
		t.Errorf("the install stopped at the refused read:\n%s", r)
	}
}
