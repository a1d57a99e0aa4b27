package deploytest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// call is one API request a controller makes (or must not make).
type call struct {
	group, resource, subresource, verb string
	// namespace of the request; "" is cluster-wide (a list or watch across
	// namespaces, the way the informers run).
	namespace string
	// why names the code that makes the call.
	why string
}

func (c call) String() string {
	r := c.resource
	if c.subresource != "" {
		r += "/" + c.subresource
	}
	if c.group != "" {
		r += "." + c.group
	}
	ns := c.namespace
	if ns == "" {
		ns = "*"
	}
	return fmt.Sprintf("%s %s in %s", c.verb, r, ns)
}

const (
	source       = "source.plumb.dev"
	kustomize    = "kustomize.plumb.dev"
	helm         = "helm.plumb.dev"
	notification = "notification.plumb.dev"
	image        = "image.plumb.dev"
	set          = "set.plumb.dev"
	coordination = "coordination.k8s.io"
	eventsGroup  = "events.k8s.io"
	apps         = "apps"
	rbac         = "rbac.authorization.k8s.io"
	apiext       = "apiextensions.k8s.io"
	// tenant is any namespace the objects live in.
	tenant = "team-a"
)

// watchOf is the get/list/watch an informer (a For, Owns or Watches in a
// controller builder, or a cached client read) needs, cluster-wide.
func watchOf(group, resource, why string) []call {
	return []call{
		{group: group, resource: resource, verb: "get", namespace: tenant, why: why},
		{group: group, resource: resource, verb: "list", why: why},
		{group: group, resource: resource, verb: "watch", why: why},
	}
}

// everyController are the calls the shared manager (pkg/app) and event
// recorder (pkg/events over controller-runtime's recorder) make.
func everyController() []call {
	return []call{
		{group: coordination, resource: "leases", verb: "get", namespace: namespace, why: "leader election (pkg/app: ctrl.Options.LeaderElection)"},
		{group: coordination, resource: "leases", verb: "create", namespace: namespace, why: "leader election"},
		{group: coordination, resource: "leases", verb: "update", namespace: namespace, why: "leader election renewal"},
		{group: eventsGroup, resource: "events", verb: "create", namespace: tenant, why: "pkg/events Recorder over mgr.GetEventRecorder (events.k8s.io)"},
		{group: eventsGroup, resource: "events", verb: "patch", namespace: tenant, why: "events.k8s.io series updates"},
		{resource: "events", verb: "create", namespace: namespace, why: "leader election events on the Lease"},
	}
}

// needed is, per controller, what its code calls: read from
// <controller>/main.go and internal/, and the pkg/ packages they use.
var needed = map[string][]call{
	"source-controller": concat(
		watchOf(source, "gitrepositories", "GitRepositoryReconciler: For(&GitRepository{}), r.Get"),
		[]call{
			{group: source, resource: "gitrepositories", verb: "patch", namespace: tenant, why: "finalizer add/remove (client.MergeFrom patch)"},
			{group: source, resource: "gitrepositories", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile.ApplyStatus (server-side apply)"},
			{group: source, resource: "gitrepositories", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
			{resource: "secrets", verb: "get", namespace: tenant, why: "fetch: spec.secretRef, uncached r.Get; helmCredentials: secretRef, certSecretRef"},
		},
		watchOf(source, "helmrepositories", "HelmRepositoryReconciler: For; HelmChartReconciler: Watches, r.Get of spec.sourceRef, List for dependencies"),
		watchOf(source, "helmcharts", "HelmChartReconciler: For, List by source index"),
		[]call{
			{group: source, resource: "helmrepositories", verb: "patch", namespace: tenant, why: "finalizer add/remove (reconcile.SetFinalizer)"},
			{group: source, resource: "helmrepositories", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile.ApplyStatus (server-side apply)"},
			{group: source, resource: "helmrepositories", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
			{group: source, resource: "helmcharts", verb: "patch", namespace: tenant, why: "finalizer add/remove (reconcile.SetFinalizer)"},
			{group: source, resource: "helmcharts", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile.ApplyStatus (server-side apply)"},
			{group: source, resource: "helmcharts", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
		},
		everyController(),
	),
	"render-controller": concat(
		watchOf(kustomize, "kustomizations", "KustomizationReconciler: For(&Kustomization{}), List by source index"),
		watchOf(source, "gitrepositories", "Watches(&GitRepository{}), r.Get of spec.sourceRef"),
		[]call{
			{group: kustomize, resource: "kustomizations", verb: "patch", namespace: tenant, why: "render.plumb.dev/finalizer removal from objects an older version gave it (Finalizer.Release)"},
			{group: kustomize, resource: "kustomizations", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
			{group: kustomize, resource: "kustomizations", subresource: "status", verb: "patch", namespace: tenant, why: "ApplyStatus of Rendered + renderedArtifact"},
			{resource: "configmaps", verb: "get", namespace: tenant, why: "variables: postBuild.substituteFrom ConfigMap, helmvalues.Merge: valuesFrom ConfigMap (uncached)"},
			{resource: "secrets", verb: "get", namespace: tenant, why: "variables: postBuild.substituteFrom Secret, helmvalues.Merge: valuesFrom Secret (uncached, by name)"},
		},
		watchOf(helm, "helmreleases", "HelmReleaseReconciler: For(&HelmRelease{}), List by HelmChart and valuesFrom indexes"),
		watchOf(source, "helmcharts", "Watches(&HelmChart{}), r.Get of the HelmChart rendered"),
		[]call{
			{group: helm, resource: "helmreleases", verb: "patch", namespace: tenant, why: "render.plumb.dev/finalizer add/remove (reconcile.SetFinalizer)"},
			{group: helm, resource: "helmreleases", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
			{group: helm, resource: "helmreleases", subresource: "status", verb: "patch", namespace: tenant, why: "ApplyStatus of Rendered + renderedArtifact + helmChart"},
			{group: source, resource: "helmcharts", verb: "create", namespace: tenant, why: "applyChart: server-side apply that creates the HelmChart of spec.chart"},
			{group: source, resource: "helmcharts", verb: "patch", namespace: tenant, why: "applyChart: server-side apply"},
			{group: source, resource: "helmcharts", verb: "delete", namespace: tenant, why: "deleteOwnedChart: on deletion, or when spec.chart goes"},
			{resource: "configmaps", verb: "list", why: "Watches(&ConfigMap{}, OnlyMetadata): valuesFrom changes re-render"},
			{resource: "configmaps", verb: "watch", why: "Watches(&ConfigMap{}, OnlyMetadata)"},
			{group: apiext, resource: "customresourcedefinitions", verb: "list", why: "Watches(CRD metadata): invalidates Capabilities"},
			{group: apiext, resource: "customresourcedefinitions", verb: "watch", why: "Watches(CRD metadata)"},
		},
		everyController(),
	),
	"sync-controller": concat(
		watchOf(kustomize, "kustomizations", "KustomizationReconciler: For, Watches for dependsOn, List by dependsOn index"),
		[]call{
			{group: kustomize, resource: "kustomizations", verb: "patch", namespace: tenant, why: "finalizer add/remove"},
			{group: kustomize, resource: "kustomizations", subresource: "status", verb: "patch", namespace: tenant, why: "ApplyStatus as sync-controller"},
			{group: kustomize, resource: "kustomizations", subresource: "finalizers", verb: "update", namespace: tenant, why: "finalizer under OwnerReferencesPermissionEnforcement"},
			// The managed objects, any kind: two examples of each call.
			{group: apps, resource: "deployments", verb: "patch", namespace: tenant, why: "engine.apply: server-side apply and dry-run"},
			{resource: "configmaps", verb: "patch", namespace: tenant, why: "engine.apply"},
			{group: apps, resource: "deployments", verb: "get", namespace: tenant, why: "engine.applyOne: live object for the diff"},
			{group: apps, resource: "deployments", verb: "list", why: "engine.Watcher: metadata informer per kind"},
			{group: apps, resource: "deployments", verb: "watch", why: "engine.Watcher"},
			{resource: "configmaps", verb: "delete", namespace: tenant, why: "engine prune"},
			{group: "batch", resource: "jobs", verb: "delete", namespace: tenant, why: "hook delete policies"},
			{resource: "namespaces", verb: "patch", why: "Namespaces in the rendered set"},
			{group: rbac, resource: "clusterroles", verb: "patch", why: "RBAC objects in the rendered set"},
			{group: apiext, resource: "customresourcedefinitions", verb: "patch", why: "CRDs in the rendered set"},
			{resource: "serviceaccounts", verb: "impersonate", namespace: tenant, why: "Impersonator: spec.serviceAccountName, --default-service-account"},
			{resource: "serviceaccounts", verb: "get", namespace: tenant, why: "finalize: does the ServiceAccount still exist (APIReader)"},
			{resource: "secrets", verb: "get", namespace: tenant, why: "drift redaction: postBuild.substituteFrom Secrets (APIReader)"},
		},
		everyController(),
	),
	"notification-controller": concat(
		watchOf(notification, "providers", "ProviderReconciler: For; Alert reconciler Watches; dispatcher Get"),
		watchOf(notification, "alerts", "AlertReconciler: For; dispatcher List"),
		watchOf(notification, "receivers", "ReceiverReconciler: For; receiver server List by path index"),
		[]call{
			{resource: "secrets", verb: "get", namespace: tenant, why: "spec.secretRef by name: Provider/Receiver reconcilers, receiver.TokenLoader, notifier.ConfigFor (APIReader)"},
			{group: notification, resource: "providers", verb: "patch", namespace: tenant, why: "fluxcd patch.SerialPatcher (metadata)"},
			{group: notification, resource: "alerts", verb: "patch", namespace: tenant, why: "SerialPatcher"},
			{group: notification, resource: "receivers", verb: "patch", namespace: tenant, why: "SerialPatcher"},
			{group: notification, resource: "providers", subresource: "status", verb: "patch", namespace: tenant, why: "SerialPatcher status"},
			{group: notification, resource: "alerts", subresource: "status", verb: "patch", namespace: tenant, why: "SerialPatcher status"},
			{group: notification, resource: "receivers", subresource: "status", verb: "patch", namespace: tenant, why: "SerialPatcher status"},
			{group: source, resource: "gitrepositories", verb: "patch", namespace: tenant, why: "receiver.requestReconcile: requestedAt annotation"},
			{group: kustomize, resource: "kustomizations", verb: "patch", namespace: tenant, why: "receiver.requestReconcile"},
			{group: source, resource: "gitrepositories", verb: "list", namespace: tenant, why: "receiver.resolve: wildcard names (APIReader)"},
			{group: kustomize, resource: "kustomizations", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: source, resource: "gitrepositories", verb: "get", namespace: tenant, why: "dispatch.labels: the event's object (APIReader)"},
			{group: kustomize, resource: "kustomizations", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: source, resource: "helmrepositories", verb: "patch", namespace: tenant, why: "receiver.requestReconcile"},
			{group: source, resource: "helmcharts", verb: "patch", namespace: tenant, why: "receiver.requestReconcile"},
			{group: helm, resource: "helmreleases", verb: "patch", namespace: tenant, why: "receiver.requestReconcile"},
			{group: source, resource: "helmrepositories", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: source, resource: "helmcharts", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: helm, resource: "helmreleases", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: source, resource: "helmrepositories", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: source, resource: "helmcharts", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: helm, resource: "helmreleases", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: image, resource: "imagerepositories", verb: "patch", namespace: tenant, why: "receiver.requestReconcile: a registry push scans at once"},
			{group: image, resource: "imagerepositories", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: image, resource: "imagepolicies", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: image, resource: "imageupdateautomations", verb: "get", namespace: tenant, why: "dispatch.labels"},
			{group: set, resource: "objectsets", verb: "patch", namespace: tenant, why: "receiver.requestReconcile: a pull_request event re-lists at once"},
			{group: set, resource: "objectsets", verb: "list", namespace: tenant, why: "receiver.resolve"},
			{group: set, resource: "objectsets", verb: "get", namespace: tenant, why: "dispatch.labels"},
		},
		everyController(),
	),
	"image-controller": imageController,
}

// imageController are image-controller's calls.
var imageController = concat(
	watchOf(image, "imagerepositories", "ImageRepositoryReconciler: For; ImagePolicyReconciler Watches and Get"),
	watchOf(image, "imagepolicies", "ImagePolicyReconciler: For; List by repository index; ImageUpdateAutomationReconciler Watches and List by selector"),
	watchOf(image, "imageupdateautomations", "ImageUpdateAutomationReconciler: For; List by source index"),
	watchOf(source, "gitrepositories", "ImageUpdateAutomationReconciler: Watches and Get of the sourceRef"),
	[]call{
		{group: image, resource: "imagerepositories", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile ApplyStatus"},
		{group: image, resource: "imagepolicies", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile ApplyStatus"},
		{group: image, resource: "imageupdateautomations", subresource: "status", verb: "patch", namespace: tenant, why: "pkg/reconcile ApplyStatus"},
		{group: source, resource: "gitrepositories", verb: "patch", namespace: tenant, why: "request.Reconcile after a push (requestedAt)"},
		{resource: "secrets", verb: "get", namespace: tenant, why: "spec.secretRef, spec.certSecretRef, signingKey and the GitRepository's Secrets by name (APIReader)"},
	},
	everyController(),
)

// denied are calls a controller does not make; least privilege means the
// API server refuses them.
var denied = map[string][]call{
	"source-controller": {
		{group: apps, resource: "deployments", verb: "delete", namespace: tenant},
		{group: apps, resource: "deployments", verb: "list"},
		{group: source, resource: "gitrepositories", verb: "delete", namespace: tenant},
		{group: source, resource: "gitrepositories", verb: "create", namespace: tenant},
		{group: source, resource: "helmcharts", verb: "create", namespace: tenant},
		{group: source, resource: "helmcharts", verb: "delete", namespace: tenant},
		{group: source, resource: "helmrepositories", verb: "update", namespace: tenant},
		{group: kustomize, resource: "kustomizations", verb: "get", namespace: tenant},
		{resource: "secrets", verb: "list"},
		{resource: "secrets", verb: "watch"},
		{resource: "secrets", verb: "create", namespace: tenant},
		{resource: "configmaps", verb: "get", namespace: tenant},
		{group: coordination, resource: "leases", verb: "update", namespace: "kube-system"},
		{group: coordination, resource: "leases", verb: "delete", namespace: namespace},
		{resource: "events", verb: "delete", namespace: tenant},
		{resource: "serviceaccounts", verb: "impersonate", namespace: tenant},
	},
	"render-controller": {
		{group: kustomize, resource: "kustomizations", verb: "update", namespace: tenant},
		{group: kustomize, resource: "kustomizations", verb: "delete", namespace: tenant},
		{group: kustomize, resource: "kustomizations", verb: "create", namespace: tenant},
		{group: source, resource: "gitrepositories", verb: "patch", namespace: tenant},
		{group: source, resource: "gitrepositories", subresource: "status", verb: "patch", namespace: tenant},
		{group: source, resource: "helmcharts", subresource: "status", verb: "patch", namespace: tenant},
		{group: helm, resource: "helmreleases", verb: "delete", namespace: tenant},
		{group: helm, resource: "helmreleases", verb: "update", namespace: tenant},
		// Secrets by name only (substituteFrom, valuesFrom): render-controller
		// cannot enumerate or stream them, nor read a Secret it is not
		// pointed at without knowing its name.
		{resource: "secrets", verb: "list"},
		{resource: "secrets", verb: "list", namespace: tenant},
		{resource: "secrets", verb: "watch"},
		{resource: "secrets", verb: "watch", namespace: tenant},
		{resource: "secrets", verb: "create", namespace: tenant},
		{resource: "configmaps", verb: "patch", namespace: tenant},
		{group: apiext, resource: "customresourcedefinitions", verb: "get"},
		{group: apps, resource: "deployments", verb: "create", namespace: tenant},
		{resource: "serviceaccounts", verb: "impersonate", namespace: tenant},
	},
	"notification-controller": {
		// Secrets by name only: the internet-facing receiver's process
		// cannot enumerate or stream them.
		{resource: "secrets", verb: "list"},
		{resource: "secrets", verb: "list", namespace: tenant},
		{resource: "secrets", verb: "watch"},
		{resource: "secrets", verb: "watch", namespace: tenant},
		{group: source, resource: "gitrepositories", verb: "delete", namespace: tenant},
		{group: source, resource: "gitrepositories", subresource: "status", verb: "patch", namespace: tenant},
		{group: kustomize, resource: "kustomizations", subresource: "status", verb: "patch", namespace: tenant},
		{group: kustomize, resource: "kustomizations", verb: "create", namespace: tenant},
		{resource: "secrets", verb: "create", namespace: tenant},
		{resource: "secrets", verb: "delete", namespace: tenant},
		{resource: "configmaps", verb: "get", namespace: tenant},
		{group: apps, resource: "deployments", verb: "get", namespace: tenant},
		{group: notification, resource: "alerts", verb: "delete", namespace: tenant},
		{group: helm, resource: "helmreleases", subresource: "status", verb: "patch", namespace: tenant},
		{group: helm, resource: "helmreleases", verb: "delete", namespace: tenant},
		{group: source, resource: "helmcharts", verb: "create", namespace: tenant},
		{resource: "serviceaccounts", verb: "impersonate", namespace: tenant},
	},
	"image-controller": {
		// Secrets by name only, and nothing but its own kinds' status.
		{resource: "secrets", verb: "list"},
		{resource: "secrets", verb: "list", namespace: tenant},
		{resource: "secrets", verb: "watch", namespace: tenant},
		{group: image, resource: "imagepolicies", verb: "patch", namespace: tenant},
		{group: image, resource: "imagerepositories", verb: "delete", namespace: tenant},
		{group: source, resource: "gitrepositories", verb: "delete", namespace: tenant},
		{group: source, resource: "gitrepositories", subresource: "status", verb: "patch", namespace: tenant},
		{group: image, resource: "imageupdateautomations", verb: "patch", namespace: tenant},
		{group: kustomize, resource: "kustomizations", verb: "patch", namespace: tenant},
		{resource: "configmaps", verb: "get", namespace: tenant},
		{resource: "serviceaccounts", verb: "impersonate", namespace: tenant},
	},
	// sync-controller is bound to cluster-admin by default: nothing to deny.
}

func concat(lists ...[]call) []call {
	var out []call
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// allowed asks the API server whether the ServiceAccount may make c.
func allowed(ctx context.Context, t *testing.T, sa string, c call) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace:   c.namespace,
			Verb:        c.verb,
			Group:       c.group,
			Resource:    c.resource,
			Subresource: c.subresource,
		},
	}}
	if err := env.Client.Create(ctx, sar); err != nil {
		t.Fatalf("SubjectAccessReview %s for %s: %v", c, sa, err)
	}
	return sar.Status.Allowed
}

// TestRBACCoversTheCode: every call in the table is allowed for the
// controller's ServiceAccount, and every call in the denied table is not.
func TestRBACCoversTheCode(t *testing.T) {
	install(t)
	ctx := context.Background()
	for _, sa := range controllers {
		t.Run(sa, func(t *testing.T) {
			calls, ok := needed[sa]
			if !ok {
				t.Fatalf("no table of calls for %s", sa)
			}
			for _, c := range calls {
				if !allowed(ctx, t, sa, c) {
					t.Errorf("%s may not %s, which it needs for %s", sa, c, c.why)
				}
			}
			for _, c := range denied[sa] {
				if allowed(ctx, t, sa, c) {
					t.Errorf("%s may %s, which its code never does", sa, c)
				}
			}
		})
	}
}

// TestNoWildcardsOutsideSync: only sync-controller holds broad rights; the
// other ClusterRoles name their groups, resources and verbs one by one. No
// role may escalate or bind, and only sync-controller's may impersonate,
// ServiceAccounts alone (never users or groups).
func TestNoWildcardsOutsideSync(t *testing.T) {
	g := NewWithT(t)
	for _, u := range append(ofKind(buildBase(t), "ClusterRole"), ofKind(buildBase(t), "Role")...) {
		role := typed[rbacv1.ClusterRole](t, u)
		for _, r := range role.Rules {
			for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
				g.Expect(list).NotTo(ContainElement("*"), "%s %s", u.GetKind(), u.GetName())
			}
			g.Expect(r.Verbs).NotTo(ContainElement("escalate"), u.GetName())
			g.Expect(r.Verbs).NotTo(ContainElement("bind"), u.GetName())
			if slices.Contains(r.Verbs, "impersonate") {
				g.Expect(u.GetName()).To(Equal("plumb-sync-controller"), "only sync-controller impersonates")
				g.Expect(r.APIGroups).To(Equal([]string{""}), u.GetName())
				g.Expect(r.Resources).To(Equal([]string{"serviceaccounts"}), u.GetName())
			}
		}
	}
	for _, u := range ofKind(buildBase(t), "ClusterRoleBinding") {
		b := typed[rbacv1.ClusterRoleBinding](t, u)
		if b.RoleRef.Name == "cluster-admin" {
			g.Expect(b.Subjects).To(ConsistOf(HaveField("Name", "sync-controller")), u.GetName())
		}
	}
}

// TestImpersonatedCalls makes real requests as each ServiceAccount (the API
// server's impersonation), the way the controllers will once deployed: a
// sample of the calls each needs succeeds, and a call it does not need is
// Forbidden.
func TestImpersonatedCalls(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "deploytest")
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, StringData: map[string]string{"token": "t"}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())

	as := func(sa string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + namespace + ":" + sa,
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	forbidden := func(err error) bool { return apierrors.IsForbidden(err) }

	src := as("source-controller")
	g.Expect(src.List(ctx, &sourcev1.GitRepositoryList{})).To(Succeed())
	g.Expect(src.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})).To(Succeed())
	g.Expect(forbidden(src.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))).To(BeTrue())
	g.Expect(forbidden(src.List(ctx, &kustomizev1.KustomizationList{}))).To(BeTrue())

	render := as("render-controller")
	g.Expect(render.List(ctx, &kustomizev1.KustomizationList{})).To(Succeed())
	g.Expect(render.List(ctx, &sourcev1.GitRepositoryList{})).To(Succeed())
	g.Expect(forbidden(render.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}}))).To(BeTrue())

	notif := as("notification-controller")
	g.Expect(notif.List(ctx, &notificationv1.AlertList{})).To(Succeed())
	g.Expect(notif.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})).To(Succeed())
	g.Expect(forbidden(notif.List(ctx, &corev1.SecretList{}))).To(BeTrue())
	g.Expect(forbidden(notif.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))).To(BeTrue())
	meta := &metav1.PartialObjectMetadataList{}
	meta.SetGroupVersionKind(sourcev1.GroupVersion.WithKind("GitRepositoryList"))
	g.Expect(notif.List(ctx, meta, client.InNamespace(ns))).To(Succeed())
	g.Expect(forbidden(notif.Delete(ctx, secret))).To(BeTrue())

	sync := as("sync-controller")
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("managed")
	cm.SetNamespace(ns)
	g.Expect(sync.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner("plumb-sync"), client.ForceOwnership)).To(Succeed())
	g.Expect(sync.Delete(ctx, cm)).To(Succeed())
}

// TestSyncRestrictedRBAC checks the narrower option on a ServiceAccount of
// its own (the default install's sync-controller keeps cluster-admin): the
// common kinds and the Kustomization calls are allowed, RBAC kinds and
// CRDs are not.
func TestSyncRestrictedRBAC(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ctx := context.Background()
	const sa = "sync-controller-restricted"
	objs := restrictedOverlay(t)
	apply := find(objs, "ClusterRole", "plumb-sync-controller-apply").DeepCopy()
	apply.SetName("deploytest-sync-restricted")
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, apply, strict))).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}))).To(Succeed())
	for _, role := range []string{"plumb-sync-controller", apply.GetName()} {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "deploytest-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: namespace}},
		}
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, b))).To(Succeed())
	}
	// The API server's authorizer learns of new bindings from a watch:
	// wait until the first one counts before reading the verdicts.
	g.Eventually(func() bool {
		return allowed(ctx, t, sa, call{group: kustomize, resource: "kustomizations", verb: "get", namespace: tenant})
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	for _, c := range needed["sync-controller"] {
		want := true
		switch c.resource {
		case "clusterroles", "customresourcedefinitions":
			want = false
		}
		if c.group == coordination {
			continue // the leader-election Role is bound to sync-controller only
		}
		g.Expect(allowed(ctx, t, sa, c)).To(Equal(want), "%s (%s)", c, c.why)
	}
	g.Expect(allowed(ctx, t, sa, call{group: rbac, resource: "rolebindings", verb: "create", namespace: tenant})).To(BeFalse())
}

// restrictedOverlay renders deploy/ with components/sync-restricted, the way
// a user's overlay would (testdata/sync-restricted).
func restrictedOverlay(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := build(filepath.Join("testdata", "sync-restricted"))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
