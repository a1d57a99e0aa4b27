package objectset

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/testtar"
)

// kustomizationTemplate renders a Kustomization per element, named by
// the element's name field.
const kustomizationTemplate = `
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: app-{{ .name }}
spec:
  interval: 5m
  path: ./apps/{{ .name }}
  prune: true
  sourceRef:
    kind: GitRepository
    name: fleet
`

func listOf(names ...string) *setv1.ListGenerator {
	l := &setv1.ListGenerator{}
	for _, n := range names {
		b, _ := json.Marshal(map[string]any{"name": n})
		l.Elements = append(l.Elements, apiextensionsv1.JSON{Raw: b})
	}
	return l
}

func newSet(ns, name, tmpl string, gens ...setv1.Generator) *setv1.ObjectSet {
	return &setv1.ObjectSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: setv1.ObjectSetSpec{
			Interval:   metav1.Duration{Duration: time.Hour},
			Generators: gens,
			Template:   tmpl,
		},
	}
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// A list generator's elements each become a Kustomization, owned by the
// set and labelled with it; an element removed from the list takes its
// Kustomization with it, and the events name what was created and
// pruned.
func TestListElementsBecomeObjectsAndARemovedOneIsPruned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	set := newSet(ns, "envs", kustomizationTemplate, setv1.Generator{List: listOf("dev", "prod")})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	got := waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(2))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(got.Status.ElementDetails).To(Equal([]setv1.ElementStatus{
		{Values: `{"name":"dev"}`, Objects: []string{"Kustomization/" + ns + "/app-dev"}},
		{Values: `{"name":"prod"}`, Objects: []string{"Kustomization/" + ns + "/app-prod"}},
	}), "each element with the object it gave, for the UI")
	for _, n := range []string{"app-dev", "app-prod"} {
		k := kustomization(ns, n)
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(k), k)).To(Succeed())
		g.Expect(k.Labels).To(HaveKeyWithValue(NameLabel, "envs"))
		g.Expect(k.Labels).To(HaveKeyWithValue(NamespaceLabel, ns))
		g.Expect(k.OwnerReferences).To(ConsistOf(HaveField("UID", got.UID)))
		g.Expect(k.Spec.Path).To(Equal("./apps/" + n[len("app-"):]))
	}
	g.Expect(recorded.of(set, setv1.ObjectsCreatedReason)).To(ContainElement(ContainSubstring("Kustomization/" + ns + "/app-prod")))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	set.Spec.Generators[0].List = listOf("dev")
	g.Expect(env.Client.Update(ctx, set)).To(Succeed())
	got = waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(1))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(got.Status.ElementDetails).To(Equal([]setv1.ElementStatus{
		{Values: `{"name":"dev"}`, Objects: []string{"Kustomization/" + ns + "/app-dev"}}}))
	gone(g, kustomization(ns, "app-prod"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization(ns, "app-dev")), kustomization(ns, "app-dev"))).To(Succeed())
	g.Expect(recorded.of(set, setv1.ObjectsPrunedReason)).To(ConsistOf(ContainSubstring("Kustomization/" + ns + "/app-prod")))
}

// gitRepository creates a GitRepository whose artifact is a tar.gz of
// files, served by the test's artifact server.
func gitRepository(t *testing.T, ns, name string, files map[string]string) *sourcev1.GitRepository {
	t.Helper()
	ctx := context.Background()
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/fleet.git",
			Interval: metav1.Duration{Duration: time.Hour}},
	}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	serveArtifact(t, repo, "1", files)
	return repo
}

// serveArtifact serves files as the repository's artifact of revision.
func serveArtifact(t *testing.T, repo *sourcev1.GitRepository, revision string, files map[string]string) {
	t.Helper()
	data := testtar.TarGz(t, testtar.Files(files)...)
	a := artifacts.Serve(fmt.Sprintf("/gitrepository/%s/%s/%s.tar.gz", repo.Namespace, repo.Name, revision), "main@sha1:"+revision, data)
	testenv.SetStatus(context.Background(), t, env.Client, repo, func(r *sourcev1.GitRepository) { r.Status.Artifact = a })
}

// A git generator gives an element per folder that matches its
// directories (apps/* without the excluded apps/legacy) and per item of
// the files that match its files; a new artifact without a folder prunes
// that folder's object through the GitRepository's watch alone.
func TestGitDirectoriesAndFilesFromTheArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	repo := gitRepository(t, ns, "fleet", map[string]string{
		"apps/api/kustomization.yaml":    "resources: []\n",
		"apps/web/kustomization.yaml":    "resources: []\n",
		"apps/legacy/kustomization.yaml": "resources: []\n",
		"apps/README.md":                 "apps\n",
		"clusters/eu/config.json":        `{"cluster": "eu", "replicas": 2}`,
		"clusters/us/config.json":        `[{"cluster": "us-east", "replicas": 3}, {"cluster": "us-west", "replicas": 1}]`,
		"clusters/us/other.yaml":         "cluster: nope\n",
	})
	dirs := newSet(ns, "dirs", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: dir-{{ .path.basenameNormalized }}
data:
  path: {{ .path.path }}
  first: {{ index .path.segments 0 }}
`, setv1.Generator{Git: &setv1.GitGenerator{
		SourceRef:   setv1.GitSourceReference{Kind: "GitRepository", Name: repo.Name},
		Directories: []setv1.GitPath{{Path: "apps/*"}, {Path: "apps/legacy", Exclude: true}},
	}})
	files := newSet(ns, "files", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-{{ .cluster }}
data:
  replicas: "{{ .replicas }}"
  folder: {{ .path.path }}
  file: {{ .path.filename }}
`, setv1.Generator{Git: &setv1.GitGenerator{
		SourceRef: setv1.GitSourceReference{Kind: "GitRepository", Name: repo.Name},
		Files:     []setv1.GitPath{{Path: "clusters/*/config.json"}},
	}})
	g.Expect(env.Client.Create(ctx, dirs)).To(Succeed())
	g.Expect(env.Client.Create(ctx, files)).To(Succeed())

	got := waitReady(t, g, dirs, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(2))
	for _, n := range []string{"api", "web"} {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dir-" + n}, cm)).To(Succeed())
		g.Expect(cm.Data).To(Equal(map[string]string{"path": "apps/" + n, "first": "apps"}))
	}
	gone(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dir-legacy"}})

	got = waitReady(t, g, files, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(3))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-us-west"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"replicas": "1", "folder": "clusters/us", "file": "config.json"}))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-eu"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("replicas", "2"))

	// A new commit without apps/web: its ConfigMap goes, with no change
	// to the set's spec.
	serveArtifact(t, repo, "2", map[string]string{
		"apps/api/kustomization.yaml": "resources: []\n",
		"clusters/eu/config.json":     `{"cluster": "eu", "replicas": 2}`,
		"clusters/us/config.json":     `[{"cluster": "us-east", "replicas": 3}, {"cluster": "us-west", "replicas": 1}]`,
	})
	g.Eventually(func(g Gomega) {
		gone(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dir-web"}})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dir-api"}, cm)).To(Succeed())
}

// A generator that fails (the artifact is gone from the server) keeps
// every object the set applied: nothing is pruned, Ready says why.
func TestAFailingGeneratorKeepsTheObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	repo := gitRepository(t, ns, "fleet", map[string]string{
		"apps/api/kustomization.yaml": "resources: []\n",
		"apps/web/kustomization.yaml": "resources: []\n",
	})
	set := newSet(ns, "dirs", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: dir-{{ .path.basename }}
`, setv1.Generator{Git: &setv1.GitGenerator{
		SourceRef:   setv1.GitSourceReference{Kind: "GitRepository", Name: repo.Name},
		Directories: []setv1.GitPath{{Path: "apps/*"}},
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	waitReady(t, g, set, "True", meta.SucceededReason)

	// An artifact that is not served: the download fails.
	testenv.SetStatus(ctx, t, env.Client, repo, func(r *sourcev1.GitRepository) {
		a := *r.Status.Artifact
		a.URL, a.Digest = artifacts.URL+"/gitrepository/missing.tar.gz", testenv.Digest([]byte("x"))
		r.Status.Artifact = &a
	})
	got := waitReady(t, g, set, "False", setv1.GeneratorFailedReason)
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(got.Status.ElementDetails).To(ConsistOf(
		HaveField("Objects", Equal([]string{"ConfigMap/" + ns + "/dir-api"})),
		HaveField("Objects", Equal([]string{"ConfigMap/" + ns + "/dir-web"}))),
		"the elements of the last applied render stay while a generator fails")
	for _, n := range []string{"api", "web"} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dir-" + n}, &corev1.ConfigMap{})).To(Succeed())
	}
}

// A render that would prune most of the set is held by the prune guard,
// nothing deleted, until the confirm-prune annotation names its digest.
func TestTheGuardHoldsARenderThatPrunesMostOfTheSet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	set := newSet(ns, "many", kustomizationTemplate, setv1.Generator{List: listOf("a", "b", "c", "d")})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	waitReady(t, g, set, "True", meta.SucceededReason)

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	set.Spec.Generators[0].List = listOf("a")
	g.Expect(env.Client.Update(ctx, set)).To(Succeed())
	got := waitReady(t, g, set, "False", kustomizev1.PruneGuardedReason)
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(4))
	for _, n := range []string{"a", "b", "c", "d"} {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization(ns, "app-"+n)), kustomization(ns, "app-"+n))).To(Succeed())
	}
	g.Expect(recorded.of(set, kustomizev1.PruneGuardedReason)).To(HaveLen(1))

	// The message names the digest to confirm.
	msg := metaMessage(got)
	digest := msg[len(msg)-len("sha256:")-64:]
	g.Expect(digest).To(HavePrefix("sha256:"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	set.Annotations = map[string]string{kustomizev1.ConfirmPruneAnnotation: digest}
	g.Expect(env.Client.Update(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) {
		gone(g, kustomization(ns, "app-b"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	got = waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
}

func metaMessage(set *setv1.ObjectSet) string {
	for _, c := range set.Status.Conditions {
		if c.Type == meta.ReadyCondition {
			return c.Message
		}
	}
	return ""
}

// An object outside the set's namespace, or of a kind a set may not
// write, stalls the set with the object named; nothing is applied.
func TestObjectsASetMayNotWriteAreRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	other := namespace(t)
	for name, tmpl := range map[string]string{
		"elsewhere": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x-{{ .name }}\n  namespace: " + other + "\n",
		"secret":    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x-{{ .name }}\n",
		"role":      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x-{{ .name }}\n",
	} {
		set := newSet(ns, name, tmpl, setv1.Generator{List: listOf("a")})
		g.Expect(env.Client.Create(ctx, set)).To(Succeed())
		got := waitReady(t, g, set, "False", setv1.ObjectRefusedReason)
		g.Expect(metaMessage(got)).To(ContainSubstring("x-a"))
	}
	gone(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x-a"}})
	gone(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-a"}})
}

// A clusters generator gives an element per kubeconfig Secret its
// selector matches, with the kubeconfig's server; a matching Secret
// created later adds an element through the Secrets' watch.
func TestClustersFromKubeconfigSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	secret := func(name, server string, lbls map[string]string) {
		kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: t}}]
`, server)
		g.Expect(env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
			Data:       map[string][]byte{"value": []byte(kc)},
		})).To(Succeed())
	}
	secret("eu", "https://eu.example.com", map[string]string{"plumb.dev/cluster": "true", "region": "eu"})
	secret("other", "https://other.example.com", nil)
	set := newSet(ns, "fleet", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-{{ .name }}
data:
  server: {{ .server }}
  region: {{ index .metadata.labels "region" }}
  stage: {{ .values.stage }}
`, setv1.Generator{Clusters: &setv1.ClustersGenerator{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"plumb.dev/cluster": "true"}},
		Values:   map[string]string{"stage": "prod"},
	}})
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	got := waitReady(t, g, set, "True", meta.SucceededReason)
	g.Expect(got.Status.Elements).To(Equal(1))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-eu"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"server": "https://eu.example.com", "region": "eu", "stage": "prod"}))

	secret("us", "https://us.example.com", map[string]string{"plumb.dev/cluster": "true", "region": "us"})
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-us"}, cm)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	gone(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-other"}})
}

// A set with a ServiceAccount writes as that ServiceAccount: one without
// the right to create Kustomizations gets ApplyFailed with the API
// server's refusal, and nothing is written.
func TestTheSetWritesAsItsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})).To(Succeed())
	set := newSet(ns, "tenant", kustomizationTemplate, setv1.Generator{List: listOf("a")})
	set.Spec.ServiceAccountName = "tenant"
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	got := waitReady(t, g, set, "False", kustomizev1.ApplyFailedReason)
	g.Expect(metaMessage(got)).To(ContainSubstring("system:serviceaccount:" + ns + ":tenant"))
	gone(g, kustomization(ns, "app-a"))
}
