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

// An ObjectSet's git generator makes a Kustomization per folder of the
// sample's repository under sets/; both apply their ConfigMap and become
// Ready. A commit that removes one folder prunes its Kustomization (and,
// through that Kustomization's own prune, its ConfigMap), the other stays.
func TestAnObjectSetMakesAKustomizationPerFolderAndPrunesARemovedOne(t *testing.T) {
	s := deploy(t, "e2e-set")
	ns, app := s.demo.Namespace, s.demo.AppNamespace
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + app + "\ndata:\n  from: set\n"
	}
	s.g.Expect(s.clone.Write(map[string]string{
		"sets/blue/configmap.yaml":  configMap("blue"),
		"sets/green/configmap.yaml": configMap("green"),
	})).To(Succeed())
	sha := s.push("Two folders for the set")
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
	for _, name := range []string{"blue", "green"} {
		waitApplied(s.ctx, t, types.NamespacedName{Namespace: ns, Name: "set-" + name}, revision(sha))
		s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: name}, &corev1.ConfigMap{})).To(Succeed())
	}
	s.g.Eventually(func(g Gomega) {
		got := &setv1.ObjectSet{}
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(got.Status.Elements).To(Equal(2))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	s.g.Expect(s.clone.Remove("sets/green/configmap.yaml")).To(Succeed())
	sha = s.push("The green folder goes")
	waitApplied(s.ctx, t, types.NamespacedName{Namespace: ns, Name: "set-blue"}, revision(sha))
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, types.NamespacedName{Namespace: ns, Name: "set-green"}, &kustomizev1.Kustomization{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the set did not prune Kustomization set-green")
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: "green"}, &corev1.ConfigMap{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "the pruned Kustomization left its ConfigMap")
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: app, Name: "blue"}, &corev1.ConfigMap{})).To(Succeed())
}
