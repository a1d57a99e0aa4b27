package inspect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/inspect"
)

// TestReadLiveFallsBackToGetsInManyNamespaces: an identity that may get
// but not list ConfigMaps, over more namespaces than ReadLive reads at a
// time, with enough entries in each to list: every list is refused and
// its gets wait for slots of their own (the list's first), and every
// object is read.
func TestReadLiveFallsBackToGetsInManyNamespaces(t *testing.T) {
	g := NewWithT(t)
	env := lazyEnv.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := "get-only"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "get-configmaps-"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "get-configmaps-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())

	var entries []kustomizev1.InventoryEntry
	for i := range 10 {
		ns, err := env.Namespace(ctx, "readlive")
		g.Expect(err).NotTo(HaveOccurred())
		for j := range 3 {
			name := fmt.Sprintf("cm-%d-%d", i, j)
			g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
			entries = append(entries, kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name})
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	// The authorizer learns of the binding from a watch.
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: entries[0].Namespace, Name: entries[0].Name}, &corev1.ConfigMap{})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	err = c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(entries[0].Namespace))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the identity must not list: %v", err)

	live := inspect.ReadLive(ctx, c, entries)
	g.Expect(live.Errors).To(BeEmpty())
	g.Expect(live.Objects).To(HaveLen(len(entries)))
}
