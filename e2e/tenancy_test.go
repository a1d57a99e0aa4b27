package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/events"
)

// Two tenants on one Plumb, every controller run with
// --no-cross-namespace-refs (TestMain). Tenant B is a copy of the sample.
// Tenant A has a namespace of its own, a ServiceAccount bound to every right
// in that namespace and nothing else, and a repository whose Kustomizations
// act as that ServiceAccount:
//
//   - one writes a ConfigMap in its own namespace and one in B's: the first
//     is created, the second refused (Ready=False naming the object, the
//     ServiceAccount and the verb) and never created;
//   - one writes a ClusterRole: refused at cluster scope, not created;
//   - one takes B's GitRepository as its source, a Receiver names B's
//     GitRepository, an Alert asks for B's events: each refused as a
//     cross-namespace reference.
//
// A's Alert, which delivers A's own events to A's webhook, never delivers
// B's, while B's Alert does.
func TestTenantsStayInsideTheirNamespaces(t *testing.T) {
	b := deploy(t, "e2e-tenant-b")
	g, ctx := b.g, b.ctx
	tenantB := b.key.Namespace
	tenantA := "e2e-tenant-a"
	const sa = "deployer"
	clusterRole := tenantA + "-escalate"

	// Tenant A: namespace, ServiceAccount with rights in it only.
	_, err := env.ApplyYAML(ctx, []byte(fmt.Sprintf(tenantARBAC, tenantA, sa)))
	g.Expect(err).NotTo(HaveOccurred())
	waitAllowed(ctx, g, tenantA, sa, "patch", "configmaps")

	// Tenant A's repository: two directories, one Kustomization each.
	repo := tenantA
	g.Expect(env.Git.CreateRepo(ctx, repo)).To(Succeed())
	clone, err := localenv.InitClone(ctx, env.Git.URL(repo), filepath.Join(t.TempDir(), repo))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone.Write(map[string]string{
		"reach/kustomization.yaml":    "resources:\n  - own.yaml\n  - intruder.yaml\n",
		"reach/own.yaml":              configMap(tenantA, "own"),
		"reach/intruder.yaml":         configMap(tenantB, "intruder"),
		"escalate/kustomization.yaml": "resources:\n  - clusterrole.yaml\n",
		"escalate/clusterrole.yaml":   fmt.Sprintf(clusterRoleYAML, clusterRole),
	})).To(Succeed())
	_, err = clone.CommitAndPush(ctx, "Reach out of the tenant")
	g.Expect(err).NotTo(HaveOccurred())

	// Tenant A's webhook, and its Plumb objects.
	hook := newEventSink(t)
	_, err = env.ApplyYAML(ctx, []byte(os.Expand(tenantAObjects, func(k string) string {
		return map[string]string{
			"A": tenantA, "B": tenantB, "SA": sa, "GIT_URL": env.Git.URL(repo), "HOOK_URL": hook.URL(),
			"TOKEN": strings.Repeat("t", 40),
		}[k]
	})))
	g.Expect(err).NotTo(HaveOccurred())

	// Impersonation: refused in B's namespace and at cluster scope, named
	// with the ServiceAccount and the verb; allowed in A's own namespace.
	waitNotReady(ctx, t, types.NamespacedName{Namespace: tenantA, Name: "reach"}, readyFalse(kustomizev1.SyncFailedReason, fmt.Sprintf(
		"ConfigMap/%s/intruder: forbidden: ServiceAccount %s/%s may not patch configmaps in namespace %s (server-side apply)", tenantB, tenantA, sa, tenantB)))
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenantA, Name: "own"}, &corev1.ConfigMap{})).To(Succeed(),
		"the ConfigMap in the tenant's own namespace was not created")
	waitNotReady(ctx, t, types.NamespacedName{Namespace: tenantA, Name: "escalate"}, readyFalse(kustomizev1.SyncFailedReason, fmt.Sprintf(
		"ClusterRole/%s: forbidden: ServiceAccount %s/%s may not patch clusterroles.rbac.authorization.k8s.io at cluster scope (server-side apply)", clusterRole, tenantA, sa)))
	expectNotFound(ctx, g, types.NamespacedName{Namespace: tenantB, Name: "intruder"}, &corev1.ConfigMap{})
	expectNotFound(ctx, g, types.NamespacedName{Name: clusterRole}, &rbacv1.ClusterRole{})

	// Cross-namespace references: refused, each with its reason.
	borrow := waitNotReady(ctx, t, types.NamespacedName{Namespace: tenantA, Name: "borrow"}, readyFalse(meta.InvalidSpecReason, fmt.Sprintf(
		"cross-namespace references are not allowed: sourceRef %s/demo is outside namespace %s", tenantB, tenantA)))
	g.Expect(borrow.Status.RenderedArtifact).To(BeNil(), "B's source was rendered for A")
	waitRefused(ctx, g, &notificationv1.Receiver{}, types.NamespacedName{Namespace: tenantA, Name: "peek"},
		fmt.Sprintf("cross-namespace references are not allowed: spec.resources[0] names namespace %q, outside %s", tenantB, tenantA))
	waitRefused(ctx, g, &notificationv1.Alert{}, types.NamespacedName{Namespace: tenantA, Name: "peek"},
		fmt.Sprintf("cross-namespace references are not allowed: spec.eventSources[0] names namespace %q, outside %s", tenantB, tenantA))

	// A's own Alert works: once it is Ready, A's webhook hears of A's
	// refused sync of a new commit. (The first refusals may come before
	// notification-controller knows the Alert, which hears what happens
	// from then on.)
	g.Eventually(func(g Gomega) {
		alert := &notificationv1.Alert{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenantA, Name: "own"}, alert)).To(Succeed())
		g.Expect(conditions.IsReady(alert)).To(BeTrue(), "Ready: %v", conditions.Get(alert, meta.ReadyCondition))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "tenant A's Alert is not Ready")
	g.Expect(clone.Write(map[string]string{"reach/own.yaml": strings.Replace(configMap(tenantA, "own"), "from: tenant-a", "from: tenant-a, again", 1)})).To(Succeed())
	again, err := clone.CommitAndPush(ctx, "Reach out of the tenant again")
	g.Expect(err).NotTo(HaveOccurred())
	requestArgoReconcile(ctx, g, &sourcev1.GitRepository{}, types.NamespacedName{Namespace: tenantA, Name: "app"})
	g.Eventually(func() []events.Event {
		return hook.About(tenantA)
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(And(
		HaveField("InvolvedObject.Name", "reach"), HaveField("Reason", kustomizev1.SyncFailedReason),
		HaveField("Revision", revision(again)))),
		"tenant A's Alert delivered nothing of A's own")

	// B's events reach B's Alert (the Slack stand-in) ...
	b.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello from tenant B")
	sha := b.push("Change tenant B's greeting")
	b.waitApplied(sha)
	b.waitSlack(kustomizev1.AppliedReason, sha)
	// ... and never A's webhook, through either of A's Alerts.
	g.Consistently(func() []events.Event {
		return hook.NotAbout(tenantA)
	}).WithTimeout(3*time.Second).WithPolling(poll).Should(BeEmpty(), "tenant A's webhook received another tenant's events")
}

// tenantARBAC is tenant A's namespace and a ServiceAccount (%[2]s) that may
// do anything in that namespace (%[1]s) and nothing elsewhere.
const tenantARBAC = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[2]s
  namespace: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: %[2]s
  namespace: %[1]s
rules:
  - apiGroups: ["*"]
    resources: ["*"]
    verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[2]s
  namespace: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: %[2]s
subjects:
  - kind: ServiceAccount
    name: %[2]s
    namespace: %[1]s
`

// tenantAObjects are tenant A's Plumb objects (${A}); ${B} is the other
// tenant's namespace.
const tenantAObjects = `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata:
  name: app
  namespace: ${A}
spec:
  url: ${GIT_URL}
  ref:
    branch: main
  interval: 10m
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: reach
  namespace: ${A}
spec:
  serviceAccountName: ${SA}
  sourceRef:
    kind: GitRepository
    name: app
  path: ./reach
  interval: 10m
  prune: true
  timeout: 1m
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: escalate
  namespace: ${A}
spec:
  serviceAccountName: ${SA}
  sourceRef:
    kind: GitRepository
    name: app
  path: ./escalate
  interval: 10m
  prune: true
  timeout: 1m
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: borrow
  namespace: ${A}
spec:
  serviceAccountName: ${SA}
  sourceRef:
    kind: GitRepository
    name: demo
    namespace: ${B}
  path: ./
  interval: 10m
  prune: true
  timeout: 1m
---
apiVersion: v1
kind: Secret
metadata:
  name: webhook-token
  namespace: ${A}
stringData:
  token: ${TOKEN}
---
apiVersion: notification.plumb.dev/v1
kind: Receiver
metadata:
  name: peek
  namespace: ${A}
spec:
  type: generic
  secretRef:
    name: webhook-token
  resources:
    - kind: GitRepository
      name: demo
      namespace: ${B}
---
apiVersion: notification.plumb.dev/v1
kind: Provider
metadata:
  name: webhook
  namespace: ${A}
spec:
  type: generic
  address: ${HOOK_URL}
---
apiVersion: notification.plumb.dev/v1
kind: Alert
metadata:
  name: own
  namespace: ${A}
spec:
  providerRef:
    name: webhook
  eventSeverity: info
  eventSources:
    - kind: GitRepository
      name: "*"
    - kind: Kustomization
      name: "*"
---
apiVersion: notification.plumb.dev/v1
kind: Alert
metadata:
  name: peek
  namespace: ${A}
spec:
  providerRef:
    name: webhook
  eventSeverity: info
  eventSources:
    - kind: Kustomization
      name: "*"
      namespace: ${B}
    - kind: GitRepository
      name: "*"
      namespace: "*"
`

const clusterRoleYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
rules:
  - apiGroups: [""]
    resources: ["secrets"]
    verbs: ["get", "list"]
`

func configMap(namespace, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  from: tenant-a\n", name, namespace)
}

// waitAllowed waits until the API server's authorizer lets the
// ServiceAccount do verb on resource in its namespace: a new RoleBinding
// takes a moment to count.
func waitAllowed(ctx context.Context, g *WithT, namespace, sa, verb, resource string) {
	waitAllowedIn(ctx, g, types.NamespacedName{Namespace: namespace, Name: sa}, verb, resource, namespace)
}

// waitAllowedIn waits until the API server's authorizer lets the
// ServiceAccount sa do verb on resource in namespace ("" at cluster
// scope).
func waitAllowedIn(ctx context.Context, g *WithT, sa types.NamespacedName, verb, resource, namespace string) {
	g.Eventually(func(g Gomega) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource},
		}}
		g.Expect(env.Client.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the binding of %s never let it %s %s in %q", sa, verb, resource, namespace)
}

// deployer creates the ServiceAccount name in namespace ns, for a
// Kustomization of the test to name in spec.serviceAccountName, bound to
// the ClusterRole role in each of namespaces, or cluster-wide when there
// are none, and waits until the authorizer counts the bindings. The suite
// runs sync-controller with --default-service-account, as deploy/ does:
// a Kustomization acts as a ServiceAccount, never as sync-controller, so
// a story that is not about tenancy gives its Kustomization the rights it
// needs, as a platform team would.
func deployer(ctx context.Context, g *WithT, ns, name, role string, namespaces ...string) {
	subject := fmt.Sprintf("subjects:\n  - kind: ServiceAccount\n    name: %s\n    namespace: %s\n", name, ns)
	roleRef := fmt.Sprintf("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: %s\n", role)
	docs := []string{fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)}
	for _, in := range namespaces {
		docs = append(docs, fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: %s-%s\n  namespace: %s\n", ns, name, in)+roleRef+subject)
	}
	if len(namespaces) == 0 {
		docs = append(docs, fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: %s-%s\n", ns, name)+roleRef+subject)
	}
	_, err := env.ApplyYAML(ctx, []byte(strings.Join(docs, "---\n")))
	g.Expect(err).NotTo(HaveOccurred())
	sa := types.NamespacedName{Namespace: ns, Name: name}
	for _, in := range namespaces {
		waitAllowedIn(ctx, g, sa, "patch", "configmaps", in)
	}
	if len(namespaces) == 0 {
		waitAllowedIn(ctx, g, sa, "create", "namespaces", "")
	}
}

// readyFalse checks a Kustomization's Ready=False has the reason and a
// message containing message.
func readyFalse(reason, message string) func(g Gomega, k *kustomizev1.Kustomization) {
	return func(g Gomega, k *kustomizev1.Kustomization) {
		g.Expect(readyCondition(k).Reason).To(Equal(reason), "Ready: %s", readyMessage(k))
		g.Expect(readyCondition(k).Message).To(ContainSubstring(message))
	}
}

// conditionsObject is a notification object with conditions.
type conditionsObject interface {
	client.Object
	conditions.Getter
}

// waitRefused waits until obj is Ready=False and Stalled with reason
// CrossNamespaceRef and the message.
func waitRefused(ctx context.Context, g *WithT, obj conditionsObject, key types.NamespacedName, message string) {
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		ready := conditions.Get(obj, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil(), "no Ready condition")
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), "Ready: %s %s", ready.Reason, ready.Message)
		g.Expect(ready.Reason).To(Equal(notificationv1.CrossNamespaceRefReason), "Ready: %s", ready.Message)
		g.Expect(ready.Message).To(Equal(message))
		g.Expect(conditions.IsTrue(obj, meta.StalledCondition)).To(BeTrue(), "not Stalled")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%T %s", obj, key)
}

// expectNotFound fails unless the object does not exist; any other error
// than NotFound fails too.
func expectNotFound(ctx context.Context, g *WithT, key types.NamespacedName, obj client.Object) {
	err := env.Client.Get(ctx, key, obj)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: want NotFound, got %v", obj, key, err)
}

// eventSink stands in for a tenant's webhook (a generic Provider): an HTTP
// endpoint on 127.0.0.1 that keeps every event it receives.
type eventSink struct {
	srv *httptest.Server

	mu     sync.Mutex
	events []events.Event
	errs   []error
}

func newEventSink(t *testing.T) *eventSink {
	s := &eventSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e events.Event
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &e)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("%w in %q", err, body))
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.events = append(s.events, e)
	}))
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, err := range s.errs {
			t.Errorf("the webhook received a body that is not an event: %v", err)
		}
	})
	return s
}

func (s *eventSink) URL() string { return s.srv.URL + "/hook" }

// About returns the events received about objects in the namespace.
func (s *eventSink) About(namespace string) []events.Event {
	return s.filter(func(e events.Event) bool { return e.InvolvedObject.Namespace == namespace })
}

// NotAbout returns the events received about objects in any other
// namespace than the one given.
func (s *eventSink) NotAbout(namespace string) []events.Event {
	return s.filter(func(e events.Event) bool { return e.InvolvedObject.Namespace != namespace })
}

func (s *eventSink) filter(keep func(events.Event) bool) []events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []events.Event
	for _, e := range s.events {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// A tenant whose Kustomizations name no ServiceAccount, on a Plumb run as
// deploy/ runs it (--default-service-account=default, TestMain): they act
// as the namespace's ServiceAccount default, which Kubernetes creates
// with no rights, and which the platform team has bound to ConfigMaps in
// the namespace only.
//
//   - one writes a ClusterRole: refused, Ready=False naming the
//     ServiceAccount default and the verb, and the ClusterRole is never
//     created — not cluster-admin, as sync-controller would be;
//   - one writes a ConfigMap in the tenant's namespace: applied, Ready.
func TestATenantsDefaultServiceAccountBoundsItsKustomization(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tenant := "e2e-tenant-default"
	clusterRole := tenant + "-escalate"

	// The namespace, and its default ServiceAccount, which
	// kube-controller-manager creates, bound to ConfigMaps there.
	_, err := env.ApplyYAML(ctx, []byte(fmt.Sprintf(defaultServiceAccountRBAC, tenant)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		return env.Client.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "default"}, &corev1.ServiceAccount{})
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "kube-controller-manager created no default ServiceAccount")
	waitAllowed(ctx, g, tenant, "default", "patch", "configmaps")

	repo := tenant
	g.Expect(env.Git.CreateRepo(ctx, repo)).To(Succeed())
	clone, err := localenv.InitClone(ctx, env.Git.URL(repo), filepath.Join(t.TempDir(), repo))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone.Write(map[string]string{
		"own/kustomization.yaml":      "resources:\n  - own.yaml\n",
		"own/own.yaml":                configMap(tenant, "own"),
		"escalate/kustomization.yaml": "resources:\n  - clusterrole.yaml\n",
		"escalate/clusterrole.yaml":   fmt.Sprintf(clusterRoleYAML, clusterRole),
	})).To(Succeed())
	sha, err := clone.CommitAndPush(ctx, "A ConfigMap, and a ClusterRole")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = env.ApplyYAML(ctx, []byte(os.Expand(defaultServiceAccountObjects, func(k string) string {
		return map[string]string{"NS": tenant, "GIT_URL": env.Git.URL(repo)}[k]
	})))
	g.Expect(err).NotTo(HaveOccurred())

	waitNotReady(ctx, t, types.NamespacedName{Namespace: tenant, Name: "escalate"}, readyFalse(kustomizev1.SyncFailedReason, fmt.Sprintf(
		"ClusterRole/%s: forbidden: ServiceAccount %s/default may not patch clusterroles.rbac.authorization.k8s.io at cluster scope (server-side apply)", clusterRole, tenant)))
	expectNotFound(ctx, g, types.NamespacedName{Name: clusterRole}, &rbacv1.ClusterRole{})

	waitApplied(ctx, t, types.NamespacedName{Namespace: tenant, Name: "own"}, revision(sha))
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "own"}, &corev1.ConfigMap{})).To(Succeed(),
		"the ConfigMap the default ServiceAccount may write was not created")
}

// defaultServiceAccountRBAC is a tenant's namespace (%[1]s) and a Role on
// ConfigMaps there, bound to its ServiceAccount default.
const defaultServiceAccountRBAC = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmaps
  namespace: %[1]s
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch", "create", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: default-configmaps
  namespace: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: configmaps
subjects:
  - kind: ServiceAccount
    name: default
    namespace: %[1]s
`

// defaultServiceAccountObjects are the tenant's Plumb objects (${NS}):
// Kustomizations that name no ServiceAccount.
const defaultServiceAccountObjects = `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata:
  name: app
  namespace: ${NS}
spec:
  url: ${GIT_URL}
  ref:
    branch: main
  interval: 10m
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: own
  namespace: ${NS}
spec:
  sourceRef:
    kind: GitRepository
    name: app
  path: ./own
  interval: 10m
  prune: true
  timeout: 1m
---
apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: escalate
  namespace: ${NS}
spec:
  sourceRef:
    kind: GitRepository
    name: app
  path: ./escalate
  interval: 10m
  prune: true
  timeout: 1m
`
