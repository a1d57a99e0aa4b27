package objectset

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
)

// restrictedController replaces the suite's reconciler with one acting
// as a user whose ClusterRole has rules, until the test ends.
func restrictedController(t *testing.T, user string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	stopController()
	stop := startController(cfg, false)
	t.Cleanup(func() {
		stop()
		stopController = startController(env.Config, false)
		for _, o := range []client.Object{binding, role} {
			if err := env.Client.Delete(context.Background(), o); err != nil {
				t.Error(err)
			}
		}
	})
	return role
}

// When sync-controller's RBAC does not let it list a kind a set writes
// (ConfigMaps here), the set still applies its objects, and Ready and a
// DriftUnwatched warning say which kind cannot be watched and that its
// drift is not corrected until it can; once the RBAC allows it, the next
// reconcile watches the kind, the note goes, and a foreign edit is
// reverted at once again.
func TestAKindTheControllerMayNotListIsNamedAsUnwatched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	configMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}
	role := restrictedController(t, "objectset-without-configmap-list", setControllerRules(configMaps))

	set, ready := configSetReadyUnwatched(t, g)
	ns := set.Namespace
	g.Expect(ready).To(ContainSubstring(`cannot list resource "configmaps"`), "the API server's refusal is quoted")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg-a"}, cm)).To(Succeed(), "the objects are applied all the same")
	g.Eventually(func() []string { return recorded.of(set, setv1.DriftUnwatchedReason) }, 30*time.Second, 50*time.Millisecond).
		Should(ConsistOf(And(ContainSubstring("sync-controller may not list ConfigMap objects"), ContainSubstring("not corrected"))))

	// Another reconcile with the kind still refused: the same message, no
	// second warning.
	g.Expect(reconciledAgain(t, g, set)).To(Equal(ready))
	g.Expect(recorded.of(set, setv1.DriftUnwatchedReason)).To(HaveLen(1))

	configMaps.Verbs = append(configMaps.Verbs, "list", "watch")
	allowedNowTheEditIsReverted(t, g, role, configMaps, set)
}

// reconciledAgain asks for a reconcile of set and waits until it has
// handled the request, returning Ready's message.
func reconciledAgain(t *testing.T, g Gomega, set *setv1.ObjectSet) string {
	t.Helper()
	requestReconcile(t, set)
	cur := &setv1.ObjectSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(set), cur)).To(Succeed())
	token := cur.Annotations[meta.ReconcileRequestAnnotation]
	var msg string
	g.Eventually(func(g Gomega) {
		got := &setv1.ObjectSet{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(set), got)).To(Succeed())
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token))
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		msg = ready.Message
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	return msg
}

// RBAC that lets sync-controller list a kind but not watch it is caught
// the same way: no informer retrying its watch in the background, Ready
// and one DriftUnwatched warning quoting the refused watch, and the kind
// watched from the first reconcile after the RBAC allows it.
func TestAKindTheControllerMayListButNotWatchIsNamedAsUnwatched(t *testing.T) {
	g := NewWithT(t)
	configMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}
	role := restrictedController(t, "objectset-without-configmap-watch", setControllerRules(configMaps))

	set, ready := configSetReadyUnwatched(t, g)
	g.Expect(ready).To(ContainSubstring(`cannot watch resource "configmaps"`), "the API server's refusal of the watch is quoted")
	g.Eventually(func() []string { return recorded.of(set, setv1.DriftUnwatchedReason) }, 30*time.Second, 50*time.Millisecond).
		Should(ConsistOf(ContainSubstring("sync-controller may not watch ConfigMap objects")))

	configMaps.Verbs = append(configMaps.Verbs, "watch")
	allowedNowTheEditIsReverted(t, g, role, configMaps, set)
}

// configSetReadyUnwatched creates a set of one ConfigMap, cfg-a, in a
// namespace of its own, waits until it is Ready, and checks that Ready's
// message names ConfigMap as a kind whose drift is not corrected; it
// returns the set and that message.
func configSetReadyUnwatched(t *testing.T, g Gomega) (*setv1.ObjectSet, string) {
	t.Helper()
	set := newSet(namespace(t), "config", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{{ .name }}\ndata:\n  mode: {{ .name }}\n",
		setv1.Generator{List: listOf("a")})
	g.Expect(env.Client.Create(context.Background(), set)).To(Succeed())
	got := waitReady(t, g, set, "True", meta.SucceededReason)
	ready := conditions.Get(got, meta.ReadyCondition).Message
	g.Expect(ready).To(HavePrefix("applied 1 objects for 1 elements; drift of its ConfigMap objects is not corrected until sync-controller may list and watch them ("), ready)
	return set, ready
}

// setControllerRules is what a set's controller needs but for
// ConfigMaps, whose rule is given (last, so that a test can widen it).
func setControllerRules(configMaps rbacv1.PolicyRule) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{setv1.GroupVersion.Group}, Resources: []string{"objectsets", "objectsets/status"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"source.plumb.dev"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		configMaps,
	}
}

// allowedNowTheEditIsReverted gives role the ConfigMaps rule, and checks
// that the next reconcile of set watches the kind (Ready's note gone) and
// that a foreign edit of its ConfigMap cfg-a is then reverted at once.
func allowedNowTheEditIsReverted(t *testing.T, g Gomega, role *rbacv1.ClusterRole, configMaps rbacv1.PolicyRule, set *setv1.ObjectSet) {
	t.Helper()
	ctx := context.Background()
	role.Rules[len(role.Rules)-1] = configMaps
	g.Expect(env.Client.Update(ctx, role)).To(Succeed())
	g.Expect(reconciledAgain(t, g, set)).To(Equal("applied 1 objects for 1 elements"))

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: set.Namespace, Name: "cfg-a"}
	g.Expect(env.Client.Get(ctx, key, cm)).To(Succeed())
	g.Expect(env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"mode":"b"}}`)), client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("mode", "a"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed(), "watched now, the edit is reverted without waiting for the interval")
}
