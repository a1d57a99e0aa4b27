package e2e

import (
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	setv1 "plumb.dev/api/set/v1"
)

// folderSet pushes a folder with a ConfigMap in the app namespace for
// each name under sets/, and creates the ObjectSet "folders" whose git
// generator makes a Kustomization set-<name> per folder, written as a
// ServiceAccount that may write Kustomizations and nothing else; it waits
// until every Kustomization applied the commit and the set is Ready.
func folderSet(t *testing.T, s *story, names ...string) (*setv1.ObjectSet, string) {
	t.Helper()
	ns, app := s.demo.Namespace, s.demo.AppNamespace
	files := map[string]string{}
	for _, name := range names {
		files["sets/"+name+"/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + app + "\ndata:\n  from: set\n"
	}
	s.g.Expect(s.clone.Write(files)).To(Succeed())
	sha := s.push("Folders for the set")
	s.waitSourceRevision(sha)

	// The set writes Kustomizations, and nothing else, in its namespace.
	s.g.Expect(env.Client.Create(s.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-writer"}})).To(Succeed())
	s.g.Expect(env.Client.Create(s.ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	})).To(Succeed())
	s.g.Expect(env.Client.Create(s.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "set-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "set-writer", Namespace: ns}},
	})).To(Succeed())
	set := &setv1.ObjectSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "folders"},
		Spec: setv1.ObjectSetSpec{
			Interval:           metav1.Duration{Duration: timeout * 10},
			ServiceAccountName: "set-writer",
			Generators: []setv1.Generator{{Git: &setv1.GitGenerator{
				SourceRef:   setv1.GitSourceReference{Kind: "GitRepository", Name: "demo"},
				Directories: []setv1.GitPath{{Path: "sets/*"}},
			}}},
			Template: `
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: set-{{ .path.basenameNormalized }}
spec:
  serviceAccountName: demo-deployer
  sourceRef: {kind: GitRepository, name: demo}
  path: ./{{ .path.path }}
  interval: 10m
  prune: true
`,
		},
	}
	s.g.Expect(env.Client.Create(s.ctx, set)).To(Succeed())
	for _, name := range names {
		waitApplied(s.ctx, t, types.NamespacedName{Namespace: ns, Name: "set-" + name}, revision(sha))
		s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: name}, &corev1.ConfigMap{})).To(Succeed())
	}
	s.g.Eventually(func(g Gomega) {
		got := &setv1.ObjectSet{}
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(got.Status.Elements).To(Equal(len(names)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return set, sha
}

// An ObjectSet's git generator makes a Kustomization per folder of the
// sample's repository under sets/; both apply their ConfigMap and become
// Ready. A commit that removes one folder prunes its Kustomization (and,
// through that Kustomization's own prune, its ConfigMap), the other stays.
func TestAnObjectSetMakesAKustomizationPerFolderAndPrunesARemovedOne(t *testing.T) {
	s := deploy(t, "e2e-set")
	ns, app := s.demo.Namespace, s.demo.AppNamespace
	folderSet(t, s, "blue", "green")

	s.g.Expect(s.clone.Remove("sets/green/configmap.yaml")).To(Succeed())
	sha := s.push("The green folder goes")
	waitApplied(s.ctx, t, types.NamespacedName{Namespace: ns, Name: "set-blue"}, revision(sha))
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, types.NamespacedName{Namespace: ns, Name: "set-green"}, &kustomizev1.Kustomization{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the set did not prune Kustomization set-green")
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: "green"}, &corev1.ConfigMap{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the pruned Kustomization left its ConfigMap")
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: "blue"}, &corev1.ConfigMap{})).To(Succeed())
}

// With the whole control plane: a child Kustomization deleted by hand
// goes through its finalizer (its ConfigMap pruned) and the set creates
// it again, which applies the ConfigMap again. Deleting the set then
// deletes every child through the garbage collector (their owner
// references), and each child's finalizer prunes what it applied, as an
// Argo CD ApplicationSet's deletion cascades to its applications'
// resources.
func TestDeletingAnObjectSetDeletesItsKustomizationsAndTheirObjects(t *testing.T) {
	s := deploy(t, "e2e-setdel")
	ns, app := s.demo.Namespace, s.demo.AppNamespace
	set, sha := folderSet(t, s, "blue", "green")

	blue := types.NamespacedName{Namespace: ns, Name: "set-blue"}
	old := &kustomizev1.Kustomization{}
	s.g.Expect(env.Client.Get(s.ctx, blue, old)).To(Succeed())
	s.g.Expect(env.Client.Delete(s.ctx, old)).To(Succeed())
	s.g.Eventually(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(s.ctx, blue, k)).To(Succeed())
		g.Expect(k.UID).NotTo(Equal(old.UID), "the set created set-blue again")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	waitApplied(s.ctx, t, blue, revision(sha))
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: "blue"}, &corev1.ConfigMap{})).To(Succeed())

	s.g.Expect(env.Client.Delete(s.ctx, set)).To(Succeed())
	for _, name := range []string{"blue", "green"} {
		s.g.Eventually(func() error {
			return env.Client.Get(s.ctx, types.NamespacedName{Namespace: ns, Name: "set-" + name}, &kustomizev1.Kustomization{})
		}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "Kustomization set-%s outlived its set", name)
		s.g.Eventually(func() error {
			return env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: name}, &corev1.ConfigMap{})
		}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "Kustomization set-%s left its ConfigMap", name)
	}
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKeyFromObject(set), &setv1.ObjectSet{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound))
}
