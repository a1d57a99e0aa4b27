package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/testgit"
)

// externalArtifactIn stores files as an ExternalArtifact's artifact in
// source-controller's storage, as another generator would, and returns
// the object.
func externalArtifactIn(t *testing.T, ns, name string, files map[string]string) *sourcev1.ExternalArtifact {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	for p, c := range files {
		g.Expect(os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)).To(Succeed())
	}
	a, err := storage.Pack(context.Background(), artifact.Ref{Kind: "externalartifact", Namespace: ns, Name: name}, "base.tar.gz", dir, artifact.PackOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	a.Revision = "v1@" + a.Digest
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Expect(k8s.Create(context.Background(), ea)).To(Succeed())
	ea.Status.Artifact = a
	g.Expect(k8s.Status().Update(context.Background(), ea)).To(Succeed())
	return ea
}

func getGenerator(g Gomega, key types.NamespacedName) *sourceextv1beta1.ArtifactGenerator {
	var obj sourceextv1beta1.ArtifactGenerator
	g.Expect(k8s.Get(context.Background(), key, &obj)).To(Succeed())
	return &obj
}

func readyOf(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == meta.ReadyCondition {
			return &conds[i]
		}
	}
	return nil
}

// waitGenerated waits for the generator's Ready=True on its generation
// and returns its ExternalArtifacts by name.
func waitGenerated(t *testing.T, key types.NamespacedName, names ...string) map[string]*sourcev1.ExternalArtifact {
	t.Helper()
	out := map[string]*sourcev1.ExternalArtifact{}
	NewWithT(t).Eventually(func(g Gomega) {
		obj := getGenerator(g, key)
		ready := readyOf(obj.Status.Conditions)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(obj.Status.Inventory).To(HaveLen(len(names)))
		for i, name := range names {
			var ea sourcev1.ExternalArtifact
			g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: key.Namespace, Name: name}, &ea)).To(Succeed())
			g.Expect(metav1.IsControlledBy(&ea, obj)).To(BeTrue())
			g.Expect(ea.Status.Artifact).NotTo(BeNil())
			g.Expect(obj.Status.Inventory[i].Name).To(Equal(name))
			g.Expect(obj.Status.Inventory[i].Digest).To(Equal(ea.Status.Artifact.Digest))
			out[name] = &ea
		}
	}, timeout, poll).Should(Succeed())
	return out
}

// Two sources, a GitRepository and an ExternalArtifact, composed into two
// ExternalArtifacts with a glob, an exclude and a Merge; a new commit
// makes a new revision; an artifact dropped from the spec is deleted with
// its files; a copy leaving its source is refused while the last
// artifacts are kept; and a Kustomization may name what was generated.
func TestArtifactGeneratorComposesSources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	repo := repoFor(t)
	head, err := repo.Commit(testgit.DefaultBranch, "app", testgit.Files{
		"deploy/app.yaml":     "kind: ConfigMap\nmetadata:\n  name: app\n",
		"deploy/README.md":    "not a manifest",
		"deploy/sub/svc.yaml": "kind: ConfigMap\nmetadata:\n  name: svc\n",
		"values-prod.yaml":    "replicas: 3\nimage:\n  tag: prod\n",
	})
	g.Expect(err).NotTo(HaveOccurred())
	gitKey := types.NamespacedName{Namespace: ns, Name: "app"}
	g.Expect(k8s.Create(ctx, newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: testgit.DefaultBranch}))).To(Succeed())
	git := waitReady(t, gitKey, "main@sha1:"+head)
	externalArtifactIn(t, ns, "base", map[string]string{
		"values.yaml":       "replicas: 1\nimage:\n  repository: app\n  tag: dev\n",
		"extra/policy.yaml": "kind: ConfigMap\nmetadata:\n  name: policy\n",
		"extra/notes.txt":   "not yaml",
	})

	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "composite"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{
				{Alias: "app", Kind: sourcev1.GitRepositoryKind, Name: "app"},
				{Alias: "base", Kind: sourcev1.ExternalArtifactKind, Name: "base"},
			},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{
				{Name: "manifests", Copy: []sourceextv1beta1.CopyOperation{
					{From: "@app/deploy/**", To: "@artifact/app/", Exclude: []string{"*.md"}},
					{From: "@base/extra/*.yaml", To: "@artifact/extra/"},
				}},
				{Name: "values", Revision: "@app", OriginRevision: "@app", Copy: []sourceextv1beta1.CopyOperation{
					{From: "@base/values.yaml", To: "@artifact/values.yaml"},
					{From: "@app/values-prod.yaml", To: "@artifact/values.yaml", Strategy: sourceextv1beta1.MergeStrategy},
				}},
			},
		},
	}
	g.Expect(k8s.Create(ctx, gen)).To(Succeed())
	key := keyOf(gen)
	got := waitGenerated(t, key, "manifests", "values")

	manifests := got["manifests"].Status.Artifact
	g.Expect(manifests.URL).To(Equal(storage.URL(manifests.Path)))
	g.Expect(manifests.Revision).To(MatchRegexp(`^latest@sha256:[0-9a-f]{64}$`))
	g.Expect(got["manifests"].Spec.SourceRef).To(Equal(&sourcev1.ExternalArtifactSourceReference{
		APIVersion: "source.extensions.plumb.dev/v1beta1", Kind: "ArtifactGenerator", Name: "composite", Namespace: ns,
	}))
	g.Expect(readyOf(got["manifests"].Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(files(t, download(t, manifests))).To(Equal(map[string]string{
		"app/app.yaml":      "kind: ConfigMap\nmetadata:\n  name: app\n",
		"app/sub/svc.yaml":  "kind: ConfigMap\nmetadata:\n  name: svc\n",
		"extra/policy.yaml": "kind: ConfigMap\nmetadata:\n  name: policy\n",
	}))
	values := got["values"].Status.Artifact
	g.Expect(values.Revision).To(Equal(git.Status.Artifact.Revision))
	g.Expect(values.Metadata).To(HaveKeyWithValue(sourceextv1beta1.OriginRevisionKey, git.Status.Artifact.Revision))
	g.Expect(files(t, download(t, values))).To(Equal(map[string]string{
		"values.yaml": "image:\n  repository: app\n  tag: prod\nreplicas: 3\n",
	}))

	// A Kustomization may name a generated ExternalArtifact: the API server
	// takes the kind, and the artifact downloads and extracts with the
	// digest check and limits render-controller applies.
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 3600e9},
			Path:      "./app",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "manifests"},
		},
	}
	g.Expect(k8s.Create(ctx, ks)).To(Succeed())
	_, err = artifact.ExtractBytes(download(t, manifests), manifests.Digest, t.TempDir(), artifact.Limits{})
	g.Expect(err).NotTo(HaveOccurred())

	// A new commit changing deploy/ makes a new revision of manifests and
	// of values (its revision is the commit's).
	head, err = repo.Commit(testgit.DefaultBranch, "more", testgit.Files{"deploy/new.yaml": "kind: ConfigMap\nmetadata:\n  name: new\n"})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, gitKey, "new-commit")
	waitReady(t, gitKey, "main@sha1:"+head)
	g.Eventually(func(g Gomega) {
		var m, v sourcev1.ExternalArtifact
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "manifests"}, &m)).To(Succeed())
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "values"}, &v)).To(Succeed())
		g.Expect(m.Status.Artifact.Revision).NotTo(Equal(manifests.Revision))
		g.Expect(v.Status.Artifact.Revision).To(Equal("main@sha1:" + head))
	}, timeout, poll).Should(Succeed())
	got = waitGenerated(t, key, "manifests", "values")
	g.Expect(files(t, download(t, got["manifests"].Status.Artifact))).To(HaveKey("app/new.yaml"))
	manifests = got["manifests"].Status.Artifact

	// Dropped from the spec: the ExternalArtifact and its files go.
	valuesPath := storage.LocalPath(got["values"].Status.Artifact.Path)
	gen = getGenerator(g, key)
	gen.Spec.OutputArtifacts = gen.Spec.OutputArtifacts[:1]
	g.Expect(k8s.Update(ctx, gen)).To(Succeed())
	waitGenerated(t, key, "manifests")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "values"}, &sourcev1.ExternalArtifact{}))
	}, timeout, poll).Should(BeTrue())
	g.Eventually(func() bool {
		_, err := os.Stat(valuesPath)
		return os.IsNotExist(err)
	}, timeout, poll).Should(BeTrue(), "the removed artifact's file is deleted")

	// A copy leaving its source is refused, and what was generated stays.
	gen = getGenerator(g, key)
	gen.Spec.OutputArtifacts[0].Copy = append(gen.Spec.OutputArtifacts[0].Copy,
		sourceextv1beta1.CopyOperation{From: "@app/../../etc", To: "@artifact/etc/"})
	g.Expect(k8s.Update(ctx, gen)).To(Succeed())
	g.Eventually(func(g Gomega) {
		obj := getGenerator(g, key)
		ready := readyOf(obj.Status.Conditions)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(kustomizev1.BuildFailedReason))
		g.Expect(ready.Message).To(ContainSubstring(`artifact "manifests": from @app/../../etc: unsafe path: "../../etc" leaves its root`))
		g.Expect(ready.Message).To(ContainSubstring("keeping the last 1 generated artifact(s)"))
		g.Expect(obj.Status.Inventory).To(HaveLen(1))
	}, timeout, poll).Should(Succeed())
	var kept sourcev1.ExternalArtifact
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "manifests"}, &kept)).To(Succeed())
	g.Expect(kept.Status.Artifact.Digest).To(Equal(manifests.Digest))
	download(t, kept.Status.Artifact)

	// Deleting the generator deletes what it generated, files included.
	g.Expect(k8s.Delete(ctx, gen)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "manifests"}, &sourcev1.ExternalArtifact{}))
	}, timeout, poll).Should(BeTrue())
	g.Eventually(func() bool {
		_, err := os.Stat(storage.LocalPath(manifests.Path))
		return os.IsNotExist(err)
	}, timeout, poll).Should(BeTrue(), "the generator's files are deleted")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, key, &sourceextv1beta1.ArtifactGenerator{}))
	}, timeout, poll).Should(BeTrue(), "the finalizer is released")
}

// An ExternalArtifact of a generated name that is not the generator's is
// left alone, and the generator says so.
func TestArtifactGeneratorLeavesForeignExternalArtifacts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	foreign := externalArtifactIn(t, ns, "taken", map[string]string{"a.yaml": "a: 1\n"})
	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{{Alias: "src", Kind: sourcev1.ExternalArtifactKind, Name: "taken"}},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "taken", Copy: []sourceextv1beta1.CopyOperation{
				{From: "@src/a.yaml", To: "@artifact/"},
			}}},
		},
	}
	g.Expect(k8s.Create(ctx, gen)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready := readyOf(getGenerator(g, keyOf(gen)).Status.Conditions)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(sourceextv1beta1.ArtifactConflictReason))
		g.Expect(ready.Message).To(ContainSubstring("ExternalArtifact " + ns + "/taken exists and is not this generator's"))
	}, timeout, poll).Should(Succeed())
	var still sourcev1.ExternalArtifact
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), &still)).To(Succeed())
	g.Expect(still.OwnerReferences).To(BeEmpty())
	g.Expect(still.Status.Artifact.Digest).To(Equal(foreign.Status.Artifact.Digest))
}
