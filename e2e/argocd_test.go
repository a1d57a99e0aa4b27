package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// An application written for Argo CD, pushed as it is: Argo CD's own
// sync-waves example (hooks with only a generateName, a Sync hook and a
// Service in wave 1, PostSync hooks), a PreSync hook deleted once it
// succeeded, objects with Prune=false, Delete=false and CreateNamespace=true,
// and a PostDelete hook. The test records every creation and deletion in
// the app's namespace as the API server orders them and checks:
//
//   - the sync's order: the PreSync hook first, then wave 0, then wave 1
//     (the Sync hook with it), then the PostSync hooks; the namespace,
//     created for CreateNamespace=true, before all of them;
//   - a commit without two ConfigMaps: the one with Prune=false stays, the
//     other is pruned, and the hooks run again under new names;
//   - the Kustomization's deletion: every object is deleted but the one
//     with Delete=false, the PostDelete hook is created only after them,
//     the Kustomization goes once it finished, and the namespace stays.
func TestAnArgoCDApplicationRunsUnchanged(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns, appNS, repo := "e2e-argocd", "e2e-argocd-app", "e2e-argocd"
	_, err := env.ApplyYAML(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n"))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(env.Git.CreateRepo(ctx, repo)).To(Succeed())
	clone, err := localenv.InitClone(ctx, env.Git.URL(repo), filepath.Join(t.TempDir(), repo))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone.Write(map[string]string{
		"app/sync-waves.yaml":  argoSyncWaves,
		"app/pre-sync.yaml":    argoPreSync,
		"app/options.yaml":     argoOptions,
		"app/post-delete.yaml": argoPostDelete,
	})).To(Succeed())
	first, err := clone.CommitAndPush(ctx, "Argo CD's sync-waves example and friends")
	g.Expect(err).NotTo(HaveOccurred())

	// The app creates its own namespace (CreateNamespace=true), which no
	// right inside one namespace allows: its ServiceAccount is the
	// platform's, bound to cluster-admin.
	deployer(ctx, g, ns, "deployer", "cluster-admin")
	rec := recordChanges(ctx, t, appNS)
	key := types.NamespacedName{Namespace: ns, Name: "argocd-app"}
	_, err = env.ApplyYAML(ctx, []byte(os.Expand(argoPlumbObjects, func(k string) string {
		return map[string]string{"NS": ns, "APP_NS": appNS, "GIT_URL": env.Git.URL(repo)}[k]
	})))
	g.Expect(err).NotTo(HaveOccurred())
	waitArgoApplied(ctx, g, key, first)

	// The order of the first sync.
	created := rec.createdOrder()
	g.Expect(created).To(ContainElements("Namespace/"+appNS, "Job/before", "ReplicaSet/backend", "Service/frontend"))
	at := rec.creationIndex
	g.Expect(at("Namespace/"+appNS)).To(BeNumerically("<", at("Job/before")), "CreateNamespace=true creates the namespace first: %v", created)
	for _, wave0 := range []string{"ReplicaSet/backend", "ReplicaSet/frontend", "Service/backend-svc", "ConfigMap/keep-me", "ConfigMap/goes"} {
		g.Expect(at("Job/before")).To(BeNumerically("<", at(wave0)), "PreSync before %s: %v", wave0, created)
		g.Expect(at(wave0)).To(BeNumerically("<", at("Service/frontend")), "wave 0 before wave 1: %v", created)
		g.Expect(at(wave0)).To(BeNumerically("<", rec.firstWithPrefix("Job/maintenance-page-up-")), "wave 0 before the Sync hook of wave 1: %v", created)
	}
	for _, post := range []string{"Job/upgrade-sql-schema-", "Job/maintenance-page-down-"} {
		g.Expect(rec.firstWithPrefix(post)).To(BeNumerically(">", at("Service/frontend")), "PostSync after the Sync phase: %v", created)
		g.Expect(rec.firstWithPrefix(post)).To(BeNumerically(">", rec.firstWithPrefix("Job/maintenance-page-up-")), "PostSync after the Sync hook: %v", created)
	}
	g.Expect(rec.firstWithPrefix("Job/cleanup-")).To(BeEquivalentTo(-1), "a PostDelete hook does not run in a sync")
	g.Eventually(func(g Gomega) bool { return argoExists(ctx, g, "Job", appNS, "before") }).WithTimeout(timeout).WithPolling(poll).
		Should(BeFalse(), "HookSucceeded deletes the PreSync hook")
	k := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
	g.Expect(inventoryIDs(k.Status.Inventory)).NotTo(ContainElement(ContainSubstring("Job")), "hooks are not in the inventory")

	// Two ConfigMaps leave Git: Prune=false keeps one.
	g.Expect(clone.Write(map[string]string{"app/options.yaml": argoOptionsWithout})).To(Succeed())
	second, err := clone.CommitAndPush(ctx, "Drop two ConfigMaps")
	g.Expect(err).NotTo(HaveOccurred())
	requestArgoReconcile(ctx, g, &sourcev1.GitRepository{}, types.NamespacedName{Namespace: ns, Name: "argocd-app"})
	waitArgoApplied(ctx, g, key, second)
	g.Eventually(func(g Gomega) bool { return argoExists(ctx, g, "ConfigMap", appNS, "goes") }).WithTimeout(timeout).WithPolling(poll).
		Should(BeFalse(), "an object that left Git is pruned")
	g.Expect(argoExists(ctx, g, "ConfigMap", appNS, "keep-me")).To(BeTrue(), "Prune=false keeps it")
	g.Expect(rec.countWithPrefix("Job/upgrade-sql-schema-")).To(Equal(2), "a new sync runs the hooks again, under new names: %v", rec.createdOrder())

	// The deletion: PostDelete runs after the prune, and the finalizer
	// waits for it.
	g.Expect(env.Client.Delete(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		err := env.Client.Get(ctx, key, &kustomizev1.Kustomization{})
		if apierrors.IsNotFound(err) {
			return false
		}
		g.Expect(err).NotTo(HaveOccurred())
		return true
	}).WithTimeout(2*timeout).WithPolling(poll).Should(BeFalse(), "the Kustomization goes once its PostDelete hook finished")
	cleanup := rec.firstWithPrefix("Job/cleanup-")
	g.Expect(cleanup).To(BeNumerically(">=", 0), "the PostDelete hook ran: %v", rec.createdOrder())
	for _, gone := range []string{"ReplicaSet/backend", "ReplicaSet/frontend", "Service/backend-svc", "Service/frontend", "ConfigMap/no-prune"} {
		g.Expect(rec.deletionIndex(gone)).To(BeNumerically(">=", 0), "%s is deleted with the Kustomization", gone)
		g.Expect(rec.deletionIndex(gone)).To(BeNumerically("<", cleanup), "%s is deleted before the PostDelete hook runs", gone)
	}
	g.Expect(argoExists(ctx, g, "ConfigMap", appNS, "data")).To(BeTrue(), "Delete=false keeps it")
	g.Expect(argoExists(ctx, g, "ConfigMap", appNS, "keep-me")).To(BeTrue(), "kept by Prune=false when it left Git, it left the inventory")
	g.Expect(argoExists(ctx, g, "Namespace", "", appNS)).To(BeTrue(), "the namespace CreateNamespace made stays")
}

// waitArgoApplied waits until the Kustomization applied the commit and is
// Ready.
func waitArgoApplied(ctx context.Context, g *WithT, key types.NamespacedName, sha string) {
	g.Eventually(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(k.Status.LastAppliedRevision).To(Equal(revision(sha)), "Ready: %s", readyMessage(k))
		g.Expect(conditions.IsReady(k)).To(BeTrue(), "Ready: %s", readyMessage(k))
	}).WithTimeout(2 * timeout).WithPolling(poll).Should(Succeed())
}

// requestArgoReconcile asks for an immediate reconcile of obj.
func requestArgoReconcile(ctx context.Context, g *WithT, obj client.Object, key types.NamespacedName) {
	g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(ann)
	g.Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
}

// argoExists says whether the object is there; only NotFound is "no".
func argoExists(ctx context.Context, g Gomega, kind, ns, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(map[string]schema.GroupVersionKind{
		"Job": {Group: "batch", Version: "v1", Kind: "Job"}, "ConfigMap": {Version: "v1", Kind: "ConfigMap"},
		"Namespace": {Version: "v1", Kind: "Namespace"},
	}[kind])
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return u.GetDeletionTimestamp() == nil || kind == "Namespace"
}

// changeRecorder keeps, in the API server's order (resource versions),
// the creations and deletions of the app's objects and of its Namespace.
type changeRecorder struct {
	mu      sync.Mutex
	created map[string][]int64 // "Kind/name" → creation resource versions
	deleted map[string]int64
}

// recordChanges watches the kinds of the app in ns, and ns itself, from
// now on.
func recordChanges(ctx context.Context, t *testing.T, ns string) *changeRecorder {
	t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := &changeRecorder{created: map[string][]int64{}, deleted: map[string]int64{}}
	kinds := map[string]schema.GroupVersionResource{
		"Job":        {Group: "batch", Version: "v1", Resource: "jobs"},
		"ReplicaSet": {Group: "apps", Version: "v1", Resource: "replicasets"},
		"Service":    {Version: "v1", Resource: "services"},
		"ConfigMap":  {Version: "v1", Resource: "configmaps"},
	}
	start := func(kind string, w watch.Interface, err error) {
		if err != nil {
			t.Fatalf("watching %s: %v", kind, err)
		}
		t.Cleanup(w.Stop)
		go func() {
			for e := range w.ResultChan() {
				u, ok := e.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
				id := kind + "/" + u.GetName()
				r.mu.Lock()
				switch e.Type {
				case watch.Added:
					r.created[id] = append(r.created[id], rv)
				case watch.Deleted:
					r.deleted[id] = rv
				}
				r.mu.Unlock()
			}
		}()
	}
	for kind, gvr := range kinds {
		w, err := dc.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
		start(kind, w, err)
	}
	w, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
	start("Namespace", w, err)
	return r
}

// createdOrder is every creation, first to last, for failure messages.
func (r *changeRecorder) createdOrder() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type c struct {
		id string
		rv int64
	}
	var all []c
	for id, rvs := range r.created {
		for _, rv := range rvs {
			all = append(all, c{id, rv})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].rv < all[j].rv })
	out := make([]string, len(all))
	for i, x := range all {
		out[i] = x.id
	}
	return out
}

// creationIndex is the resource version of id's first creation, -1 when
// it was not created.
func (r *changeRecorder) creationIndex(id string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rvs := r.created[id]; len(rvs) > 0 {
		return rvs[0]
	}
	return -1
}

// firstWithPrefix is the first creation of an object named with the
// prefix (a generateName hook's), -1 when none.
func (r *changeRecorder) firstWithPrefix(prefix string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := int64(-1)
	for id, rvs := range r.created {
		if strings.HasPrefix(id, prefix) && (first < 0 || rvs[0] < first) {
			first = rvs[0]
		}
	}
	return first
}

// countWithPrefix counts the objects created with names of the prefix.
func (r *changeRecorder) countWithPrefix(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, rvs := range r.created {
		if strings.HasPrefix(id, prefix) {
			n += len(rvs)
		}
	}
	return n
}

// deletionIndex is the resource version of id's deletion, -1 when it
// was not deleted.
func (r *changeRecorder) deletionIndex(id string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv, ok := r.deleted[id]; ok {
		return rv
	}
	return -1
}

const argoPlumbObjects = `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata:
  name: argocd-app
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
  name: argocd-app
  namespace: ${NS}
spec:
  serviceAccountName: deployer
  sourceRef:
    kind: GitRepository
    name: argocd-app
  path: ./app
  targetNamespace: ${APP_NS}
  interval: 10m
  prune: true
  maxPrunePercent: 100
  timeout: 2m
`

// argoSyncWaves is Argo CD's sync-waves example application, as its
// repository has it but for the images (the pod simulator runs anything)
// and a CreateNamespace=true on the first object.
const argoSyncWaves = `---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: upgrade-sql-schema-
  annotations:
    argocd.argoproj.io/hook: PostSync
spec:
  template:
    spec:
      containers:
        - name: upgrade-sql-schema
          image: registry.example/alpine:latest
          command: ["sleep", "1"]
      restartPolicy: Never
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: backend
  annotations:
    argocd.argoproj.io/sync-options: CreateNamespace=true
spec:
  replicas: 2
  selector:
    matchLabels:
      tier: backend
  template:
    metadata:
      labels:
        tier: backend
    spec:
      containers:
        - name: main
          image: registry.example/nginx:latest
---
apiVersion: v1
kind: Service
metadata:
  name: backend-svc
spec:
  selector:
    tier: backend
  ports:
    - protocol: TCP
      port: 8080
      targetPort: 8080
---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: maintenance-page-up-
  annotations:
    argocd.argoproj.io/hook: Sync
    argocd.argoproj.io/sync-wave: "1"
spec:
  template:
    spec:
      containers:
        - name: page-up
          image: registry.example/alpine:latest
          command: ["sleep", "1"]
      restartPolicy: Never
  backoffLimit: 0
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: frontend
spec:
  replicas: 2
  selector:
    matchLabels:
      tier: frontend
  template:
    metadata:
      labels:
        tier: frontend
    spec:
      containers:
        - name: main
          image: registry.example/node:latest
---
apiVersion: v1
kind: Service
metadata:
  name: frontend
  annotations:
    argocd.argoproj.io/sync-wave: "1"
spec:
  selector:
    tier: frontend
  ports:
    - protocol: TCP
      port: 80
      targetPort: 80
---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: maintenance-page-down-
  annotations:
    argocd.argoproj.io/hook: PostSync
spec:
  template:
    spec:
      containers:
        - name: page-down
          image: registry.example/alpine:latest
          command: ["sleep", "1"]
      restartPolicy: Never
`

// argoPreSync is the PreSync hook of Argo CD's pre-post-sync example.
const argoPreSync = `apiVersion: batch/v1
kind: Job
metadata:
  name: before
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: HookSucceeded
spec:
  template:
    spec:
      containers:
      - name: endpoint-consumer
        image: registry.example/curl:latest
        command: ["curl", "http://backend-svc:8080/"]
      restartPolicy: Never
  backoffLimit: 2
`

const argoOptionsWithout = `apiVersion: v1
kind: ConfigMap
metadata:
  name: data
  annotations:
    argocd.argoproj.io/sync-options: Delete=false
data:
  keep: "when the application is deleted"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: no-prune
  annotations:
    argocd.argoproj.io/sync-options: Prune=false
data:
  keep: "not when the application is deleted"
`

var argoOptions = argoOptionsWithout + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep-me
  annotations:
    argocd.argoproj.io/sync-options: Prune=false
data:
  keep: "when it leaves Git"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: goes
data:
  keep: "no"
`

const argoPostDelete = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: cleanup-
  annotations:
    argocd.argoproj.io/hook: PostDelete
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
spec:
  template:
    spec:
      containers:
      - name: cleanup
        image: registry.example/alpine:latest
        command: ["sleep", "1"]
      restartPolicy: Never
`
