package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/manage"
)

// tenantServiceAccount creates the ServiceAccount name in ns, bound by a
// RoleBinding to a Role with every right on ConfigMaps in ns and nothing
// else, and waits until the API server's authorizer counts the binding.
func tenantServiceAccount(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})).To(Succeed())
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"configmaps"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	})).To(Succeed())
	g.Eventually(func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":" + name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "patch", Resource: "configmaps",
			},
		}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the RoleBinding never took effect")
}

// configMapIn is a ConfigMap manifest in the namespace.
func configMapIn(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: %s\n", name, ns, name)
}

const clusterRoleManifest = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
`

// withController runs the test against a sync-controller started with the
// options (its flags), and puts the usual one back afterwards.
func withController(t *testing.T, options ...func(*KustomizationReconciler)) {
	t.Helper()
	controllerMu.Lock()
	stopController()
	stopController = startController(options...)
	t.Cleanup(func() {
		stopController()
		stopController = startController()
		controllerMu.Unlock()
	})
}

func TestAServiceAccountCannotWriteOutsideItsRights(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.ServiceAccountName = "deployer" })
	tenantA := ks.Namespace
	tenantB, err := env.Namespace(ctx, "tenant-b")
	g.Expect(err).NotTo(HaveOccurred())
	tenantServiceAccount(t, ctx, tenantA, "deployer")

	// Another tenant's namespace: refused, named, not created; the object
	// it may write is created, by plumb-sync's field manager.
	render(t, ks, "main@sha1:t1", configMapIn(tenantA, "own")+"---\n"+configMapIn(tenantB, "intruder"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring(fmt.Sprintf("ConfigMap/%s/intruder: forbidden: ServiceAccount %s/deployer may not patch configmaps in namespace %s", tenantB, tenantA, tenantB)))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "intruder"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
	own := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: "own"}, own)).To(Succeed())
	g.Expect(own.ManagedFields).To(ContainElement(And(
		HaveField("Manager", manage.FieldManager), HaveField("Operation", metav1.ManagedFieldsOperationApply))))
	for _, m := range own.ManagedFields {
		g.Expect(m.Manager).To(Equal(manage.FieldManager), "a write by another field manager")
	}

	// A cluster-scoped object: refused at cluster scope, not created.
	clusterRole := "plumb-test-" + tenantA
	render(t, ks, "main@sha1:t2", configMapIn(tenantA, "own")+"---\n"+fmt.Sprintf(clusterRoleManifest, clusterRole))
	g.Eventually(func() string {
		got := &kustomizev1.Kustomization{}
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)
		return conditions.GetMessage(got, meta.ReadyCondition)
	}, time.Minute, 100*time.Millisecond).Should(ContainSubstring(fmt.Sprintf(
		"ClusterRole/%s: forbidden: ServiceAccount %s/deployer may not patch clusterroles.rbac.authorization.k8s.io at cluster scope", clusterRole, tenantA)))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: clusterRole}, &rbacv1.ClusterRole{})).To(Satisfy(apierrors.IsNotFound))
}

func TestPruneCannotDeleteWhatTheServiceAccountMayNot(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	tenantA := ks.Namespace
	tenantB, err := env.Namespace(ctx, "tenant-b")
	g.Expect(err).NotTo(HaveOccurred())
	tenantServiceAccount(t, ctx, tenantA, "deployer")

	// Applied with the controller's own identity, before the Kustomization
	// named a ServiceAccount.
	render(t, ks, "main@sha1:p1", configMapIn(tenantA, "own")+"---\n"+configMapIn(tenantA, "leaving")+"---\n"+configMapIn(tenantB, "elsewhere"))
	waitReady(t, ks, "main@sha1:p1")

	// Now as the ServiceAccount, both objects left Git: the one in its own
	// namespace is pruned, the other is refused and stays.
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	current.Spec.ServiceAccountName = "deployer"
	g.Expect(env.Client.Update(ctx, current)).To(Succeed())
	render(t, ks, "main@sha1:p2", configMapIn(tenantA, "own"))
	g.Expect(waitNotReady(t, ks, kustomizev1.PruneFailedReason)).To(ContainSubstring(fmt.Sprintf(
		"ConfigMap/%s/elsewhere: forbidden: ServiceAccount %s/deployer may not delete configmaps in namespace %s", tenantB, tenantA, tenantB)))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: "leaving"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
	kept := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "elsewhere"}, kept)).To(Succeed())
	g.Expect(kept.DeletionTimestamp).To(BeNil())

	// The prune on deletion acts as the ServiceAccount too: it cannot
	// delete the object, and the finalizer holds the Kustomization.
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), cur)).To(Succeed())
		g.Expect(cur.DeletionTimestamp).NotTo(BeNil())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: "own"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "elsewhere"}, kept)).To(Succeed())
	g.Expect(kept.DeletionTimestamp).To(BeNil())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})).To(Succeed())

	// With the ServiceAccount gone there is no one to prune as: the
	// finalizer is released and the object left in place.
	g.Expect(env.Client.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: tenantA}})).To(Succeed())
	// Wake the controller (a deleted object's reconcile writes no status,
	// so requestReconcile's wait does not apply).
	current = &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().Format(time.RFC3339Nano)}
	g.Expect(client.IgnoreNotFound(env.Client.Patch(ctx, current, patch))).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})
	}, 30*time.Second, 100*time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "elsewhere"}, kept)).To(Succeed())
}

func TestDefaultServiceAccountAndCrossNamespaceRefs(t *testing.T) {
	withController(t, func(r *KustomizationReconciler) {
		r.DefaultServiceAccount = "tenant"
		r.NoCrossNamespaceRefs = true
	})

	t.Run("the default ServiceAccount acts for a Kustomization that names none", func(t *testing.T) {
		g := NewWithT(t)
		ctx, ks := newKustomization(t, nil)
		tenantB, err := env.Namespace(ctx, "tenant-b")
		g.Expect(err).NotTo(HaveOccurred())
		tenantServiceAccount(t, ctx, ks.Namespace, "tenant")
		render(t, ks, "main@sha1:d1", configMapIn(ks.Namespace, "own")+"---\n"+configMapIn(tenantB, "intruder"))
		g.Expect(waitNotReady(t, ks, kustomizev1.SyncFailedReason)).To(ContainSubstring(fmt.Sprintf(
			"ConfigMap/%s/intruder: forbidden: ServiceAccount %s/tenant may not patch configmaps", tenantB, ks.Namespace)))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "intruder"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "own"}, &corev1.ConfigMap{})).To(Succeed())
	})

	t.Run("a default ServiceAccount that does not exist is named as missing, and nothing is applied", func(t *testing.T) {
		g := NewWithT(t)
		ctx, ks := newKustomization(t, nil)
		render(t, ks, "main@sha1:m1", configMapIn(ks.Namespace, "own"))
		g.Expect(waitNotReady(t, ks, kustomizev1.SyncFailedReason)).To(And(
			HavePrefix(fmt.Sprintf("ServiceAccount %s/tenant does not exist (sync-controller's --default-service-account, as spec.serviceAccountName is empty): "+
				"create it and bind it the rights to apply these objects; ", ks.Namespace)),
			ContainSubstring(fmt.Sprintf("ConfigMap/%s/own: forbidden: ServiceAccount %s/tenant may not patch configmaps", ks.Namespace, ks.Namespace))))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "own"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))

		// Once the platform creates and binds it, the next try applies.
		tenantServiceAccount(t, ctx, ks.Namespace, "tenant")
		requestReconcile(t, ks)
		waitReady(t, ks, "main@sha1:m1")
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "own"}, &corev1.ConfigMap{})).To(Succeed())
	})

	t.Run("a named ServiceAccount that does not exist is named as missing", func(t *testing.T) {
		g := NewWithT(t)
		ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.ServiceAccountName = "deployer" })
		render(t, ks, "main@sha1:m2", configMapIn(ks.Namespace, "own"))
		g.Expect(waitNotReady(t, ks, kustomizev1.SyncFailedReason)).To(HavePrefix(fmt.Sprintf(
			"ServiceAccount %s/deployer does not exist (spec.serviceAccountName): create it and bind it the rights to apply these objects; ", ks.Namespace)))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "own"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
	})

	for _, tc := range []struct {
		name   string
		mutate func(ks *kustomizev1.Kustomization)
		refers string
	}{
		{
			name: "dependsOn",
			mutate: func(ks *kustomizev1.Kustomization) {
				ks.Spec.DependsOn = []meta.DependencyReference{{Name: "infra", Namespace: "elsewhere"}}
			},
			refers: "dependsOn elsewhere/infra",
		},
		{
			name: "healthChecks",
			mutate: func(ks *kustomizev1.Kustomization) {
				ks.Spec.HealthChecks = []kustomizev1.NamespacedObjectKindReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "db", Namespace: "elsewhere"}}
			},
			refers: "healthChecks ConfigMap elsewhere/db",
		},
	} {
		t.Run("a cross-namespace "+tc.name+" is refused until the spec changes", func(t *testing.T) {
			g := NewWithT(t)
			ctx, ks := newKustomization(t, tc.mutate)
			tenantServiceAccount(t, ctx, ks.Namespace, "tenant")
			render(t, ks, "main@sha1:x1", configMapIn(ks.Namespace, "own"))
			g.Expect(waitNotReady(t, ks, meta.InvalidSpecReason)).To(Equal(fmt.Sprintf(
				"cross-namespace references are not allowed: %s is outside namespace %s", tc.refers, ks.Namespace)))
			got := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
			g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "own"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))

			// Without the reference the Kustomization goes on.
			got.Spec.DependsOn, got.Spec.HealthChecks = nil, nil
			g.Expect(env.Client.Update(ctx, got)).To(Succeed())
			render(t, ks, "main@sha1:x1", configMapIn(ks.Namespace, "own"))
			waitReady(t, ks, "main@sha1:x1")
		})
	}
}

func TestDriftReportsRedactValuesSubstitutedFromSecrets(t *testing.T) {
	g := NewWithT(t)
	const password = "hunter2-correct-horse"
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{
			{Kind: "ConfigMap", Name: "settings"}, {Kind: "Secret", Name: "creds"},
		}}
	})
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ks.Namespace},
		StringData: map[string]string{"db_password": password},
	})).To(Succeed())
	subscription := subscribeEvents(t, ks)
	// What render-controller would have made of ${db_password}.
	render(t, ks, "main@sha1:r1", fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: %s
data:
  dsn: "postgres://app:%s@db/app"
  mode: live
`, ks.Namespace, password))
	waitReady(t, ks, "main@sha1:r1")

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "app"}, cm)).To(Succeed())
	cm.Data["dsn"] = "postgres://app:guessed@db/app"
	cm.Data["mode"] = "debug"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())

	g.Eventually(func(g Gomega) {
		for _, reason := range []string{kustomizev1.DriftDetectedReason, kustomizev1.DriftCorrectedReason} {
			got := subscription.withReason(reason)
			g.Expect(got).NotTo(BeEmpty(), reason)
			g.Expect(got[len(got)-1].Changes).To(ConsistOf(
				HaveField("Path", "data.dsn"),
				HaveField("Path", "data.mode"),
			), reason)
			for _, c := range got[len(got)-1].Changes {
				switch c.Path {
				case "data.dsn":
					// Both sides: the field holds the secret in Git.
					g.Expect(c.Before).To(Equal(`"<redacted>"`), reason)
					g.Expect(c.After).To(Equal(`"<redacted>"`), reason)
				case "data.mode":
					g.Expect(c.Before).To(Equal(`"debug"`), reason)
					g.Expect(c.After).To(Equal(`"live"`), reason)
				}
			}
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func() string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "app"}, cm)).To(Succeed())
		return cm.Data["dsn"]
	}, 30*time.Second, 100*time.Millisecond).Should(ContainSubstring(password), "the drift was not corrected")
	// The correction is applied before the reconcile writes its status:
	// wait for the drift record rather than reading it once.
	got := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(got.Status.Drift).NotTo(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	status, err := json.Marshal(got.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring(password))
	for _, e := range subscription.all() {
		data, err := json.Marshal(e)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).NotTo(ContainSubstring(password), e.Reason)
	}
}
