package cmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/render"
)

// lockDowns counts the calls of lockDownProcess: the test process serves
// and fetches on the default transport, which the real one would disable
// for every test after it (pkg/render tests the real one).
var lockDowns atomic.Int64

func init() { lockDownProcess = func() { lockDowns.Add(1) } }

// writeTree writes files (slash paths relative to dir) into dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkout is a local clone of an app repository: a base and an overlay,
// with Git metadata that source-controller leaves out of the artifact.
func checkout(t *testing.T) string {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		".git/HEAD":   "ref: refs/heads/main\n",
		".git/config": "[core]\n",
		"apps/base/kustomization.yaml": `resources: [deployment.yaml, settings.yaml]
`,
		"apps/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.0.0
`,
		"apps/base/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: ${greeting}
  region: ${region}
  token: ${token}
  fallback: ${missing:=default}
`,
		"apps/prod/kustomization.yaml": `resources: [../base]
`,
		"apps/prod/notes.md": "not a manifest\n",
	})
	return dir
}

func TestBuildRendersACheckoutWithTheClusterSpecAndVariables(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "repo")
	create(ctx, t, repo)
	create(ctx, t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-vars"}, Data: map[string]string{"region": "eu-1", "greeting": "overridden"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-secrets"}, StringData: map[string]string{"token": "s3cr3t-token"}},
	)
	ks := kustomization(ns, "web", "repo")
	ks.Spec.Path = "apps/prod"
	ks.Spec.NamePrefix = "prod-"
	ks.Spec.TargetNamespace = "web-prod"
	ks.Spec.Images = []kustomizev1.Image{{Name: "ghcr.io/acme/web", NewTag: "2.0.0"}}
	ks.Spec.Patches = []kustomizev1.Patch{{Patch: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3}
`}}
	ks.Spec.PostBuild = &kustomizev1.PostBuild{
		Substitute: map[string]string{"greeting": "hello"},
		SubstituteFrom: []kustomizev1.SubstituteReference{
			{Kind: "ConfigMap", Name: "cluster-vars"},
			{Kind: "Secret", Name: "cluster-secrets"},
			{Kind: "ConfigMap", Name: "absent", Optional: true},
		},
	}
	create(ctx, t, ks)
	dir := checkout(t)

	before := lockDowns.Load()
	r := plumb("build", "kustomization", "web", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lockDowns.Load()).To(Equal(before+1), "the process is locked down before the build")

	objs, err := object.DecodeManifests([]byte(r.out))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	byKind := map[string]map[string]any{}
	for _, o := range objs {
		g.Expect(o.GetNamespace()).To(Equal("web-prod"), "targetNamespace")
		g.Expect(o.GetName()).To(HavePrefix("prod-"), "namePrefix")
		byKind[o.GetKind()] = o.Object
	}
	g.Expect(byKind["ConfigMap"]["data"]).To(Equal(map[string]any{
		"greeting": "hello", // substitute wins over substituteFrom
		"region":   "eu-1",
		"token":    "s3cr3t-token",
		"fallback": "default",
	}))
	dep := byKind["Deployment"]["spec"].(map[string]any)
	g.Expect(dep["replicas"]).To(BeEquivalentTo(3), "spec.patches")
	container := dep["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	g.Expect(container["image"]).To(Equal("ghcr.io/acme/web:2.0.0"), "spec.images")
	g.Expect(r.errOut).To(BeEmpty())
}

// TestBuildEvaluatesJsonnet: plumb build renders a Kustomization's
// .jsonnet files with its spec.jsonnet, as render-controller does.
func TestBuildEvaluatesJsonnet(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "repo"))
	ks := kustomization(ns, "web", "repo")
	ks.Spec.Path = "app"
	ks.Spec.Jsonnet = &kustomizev1.Jsonnet{
		ExtVars: []kustomizev1.JsonnetVar{{Name: "region", Value: "eu-1"}},
		TLAs:    []kustomizev1.JsonnetVar{{Name: "replicas", Value: "1 + 2", Code: true}},
		Libs:    []string{"lib"},
	}
	create(ctx, t, ks)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"lib/labels.libsonnet": `{ app: "web" }`,
		"app/web.jsonnet": `local labels = import "labels.libsonnet";
function(replicas=1) [
  {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "settings", labels: labels}, data: {region: std.extVar("region")}},
  {apiVersion: "apps/v1", kind: "Deployment", metadata: {name: "web", labels: labels},
   spec: {replicas: replicas, selector: {matchLabels: labels}, template: {metadata: {labels: labels}, spec: {containers: [{name: "web", image: "ghcr.io/acme/web:1.0.0"}]}}}},
]
`,
	})

	r := plumb("build", "kustomization", "web", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	objs, err := object.DecodeManifests([]byte(r.out))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	byKind := map[string]map[string]any{}
	for _, o := range objs {
		byKind[o.GetKind()] = o.Object
	}
	g.Expect(byKind["ConfigMap"]["data"]).To(Equal(map[string]any{"region": "eu-1"}))
	g.Expect(byKind["Deployment"]["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(3))

	// A bad file fails as render-controller's render does.
	writeTree(t, dir, map[string]string{"app/web.jsonnet": "local f(x) = f(x + 1); f(0)\n"})
	r = plumb("build", "kustomization", "web", "-n", ns, "--path", dir)
	g.Expect(r.code).NotTo(Equal(ExitOK), r.String())
	g.Expect(r.errOut).To(ContainSubstring("evaluating app/web.jsonnet: RUNTIME ERROR: max stack frames exceeded."))
}

func TestBuildPacksLikeSourceController(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "repo")
	ignore := "/plain/draft.yaml\n"
	repo.Spec.Ignore = &ignore
	create(ctx, t, repo)
	ks := kustomization(ns, "plain", "repo")
	ks.Spec.Path = "plain"
	create(ctx, t, ks)
	dir := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  a: b\n"
	}
	writeTree(t, dir, map[string]string{
		"plain/kept.yaml":     cm("kept"),
		"plain/draft.yaml":    cm("draft"), // the GitRepository's spec.ignore
		"plain/sub/more.yaml": cm("more"),
		"plain/.sourceignore": "sub/\n",
	})

	r := plumb("build", "ks", "plain", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	objs, err := object.DecodeManifests([]byte(r.out))
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
		g.Expect(o.GetNamespace()).To(BeEmpty(), "sync-controller defaults the namespace, not the render")
	}
	g.Expect(names).To(Equal([]string{"kept"}))

	// Without the GitRepository the default rules apply, with a warning.
	g.Expect(env.Client.Delete(ctx, repo)).To(Succeed())
	r = plumb("build", "ks", "plain", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.errOut).To(ContainSubstring("warning: GitRepository " + ns + "/repo (spec.sourceRef): not found; packing with the default ignore rules"))
	g.Expect(r.out).To(ContainSubstring("name: draft"))
	g.Expect(r.out).NotTo(ContainSubstring("name: more"), ".sourceignore is still read")
}

// childKubeconfigEnv runs the test binary as a child of a test, on the
// control plane whose kubeconfig it names.
const childKubeconfigEnv = "PLUMB_CLI_TEST_CHILD_KUBECONFIG"

// TestBuildLocksTheProcessDown runs plumb build with the real
// render.LockDownProcess, in a process of its own: the build reads the
// cluster and renders, and afterwards HTTP through the default transport
// is refused without a connection.
func TestBuildLocksTheProcessDown(t *testing.T) {
	if os.Getenv(childKubeconfigEnv) != "" {
		t.Skip("in the child")
	}
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "repo"))
	ks := kustomization(ns, "web", "repo")
	ks.Spec.Path = "apps/prod"
	create(ctx, t, ks)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildLockedDownChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childKubeconfigEnv+"="+kubeconfig,
		"CHILD_NAMESPACE="+ns, "CHILD_CHECKOUT="+checkout(t), "CHILD_URL="+srv.URL)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("PASS"))
	g.Expect(string(out)).NotTo(ContainSubstring("no tests to run"))
	g.Expect(hits.Load()).To(BeZero(), "nothing reached the server")
}

func TestBuildLockedDownChild(t *testing.T) {
	if os.Getenv(childKubeconfigEnv) == "" {
		t.Skip("run by TestBuildLocksTheProcessDown")
	}
	g := NewWithT(t)
	lockDownProcess = render.LockDownProcess
	r := plumb("build", "ks", "web", "-n", os.Getenv("CHILD_NAMESPACE"), "--path", os.Getenv("CHILD_CHECKOUT"))
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("kind: Deployment"))
	_, err := http.Get(os.Getenv("CHILD_URL"))
	g.Expect(err).To(MatchError(render.ErrNetworkRefused))
	g.Expect(os.Getenv("GIT_ALLOW_PROTOCOL")).To(Equal("plumb-rendering-allows-none"))
}

func TestBuildFailuresAreRenderControllers(t *testing.T) {
	ctx, ns := newNamespace(t)
	create(ctx, t, gitRepo(ns, "repo"))
	ks := kustomization(ns, "web", "repo")
	ks.Spec.Path = "apps/prod"
	create(ctx, t, ks)

	t.Run("a remote resource is refused without a request", func(t *testing.T) {
		g := NewWithT(t)
		dir := checkout(t)
		writeTree(t, dir, map[string]string{"apps/prod/kustomization.yaml": "resources: [../base, 'https://raw.githubusercontent.com/acme/x/main/cm.yaml']\n"})
		r := plumb("build", "ks", "web", "-n", ns, "--path", dir)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("the checkout does not render (RemoteResourceRefused): "))
		g.Expect(r.errOut).To(ContainSubstring(`resources "https://raw.githubusercontent.com/acme/x/main/cm.yaml" refused`))
		g.Expect(r.out).To(BeEmpty())
	})

	t.Run("a broken kustomization", func(t *testing.T) {
		g := NewWithT(t)
		dir := checkout(t)
		writeTree(t, dir, map[string]string{"apps/prod/kustomization.yaml": "resources: [../missing]\n"})
		r := plumb("build", "ks", "web", "-n", ns, "--path", dir)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("the checkout does not render (BuildFailed): "))
	})

	t.Run("a missing substituteFrom object", func(t *testing.T) {
		g := NewWithT(t)
		other := kustomization(ns, "vars", "repo")
		other.Spec.Path = "apps/prod"
		other.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "nowhere"}}}
		create(ctx, t, other)
		r := plumb("build", "ks", "vars", "-n", ns, "--path", checkout(t))
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.errOut).To(ContainSubstring("(SubstituteFailed): Secret " + ns + "/nowhere (postBuild.substituteFrom) not found; set optional: true to build without it"))
	})

	t.Run("argument errors", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("build", "ks", "web", "-n", ns)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(`required flag(s) "path" not set`))

		r = plumb("build", "ks", "web", "-n", ns, "--path", filepath.Join(checkout(t), "apps"))
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("has no folder apps/prod (the Kustomization's spec.path): --path is the root of the checkout"))

		r = plumb("build", "ks", "nope", "-n", ns, "--path", checkout(t))
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(strings.ToLower(r.errOut)).To(ContainSubstring("not found"))
	})
}
