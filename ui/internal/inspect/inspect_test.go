package inspect

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/testenv"
)

const secretFromGit = "s3cr3t-from-git"

const manifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: ` + secretFromGit + `
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    plumb.dev/hook: PreSync
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox
`

// fixture is a Kustomization synced from manifests, as sync-controller
// leaves it.
type fixture struct {
	ns      string
	ks      *kustomizev1.Kustomization
	started time.Time
	// arts serves the renders, in render-controller's folder of the
	// Kustomization (dir).
	arts *testenv.ArtifactServer
	dir  string
}

func newFixture(t *testing.T) (*fixture, func() string) {
	ctx, ns := newNamespace(t)
	arts := testenv.NewArtifactServer(t)
	ks := kustomization(ns, "app")
	create(ctx, t, ks)
	data := []byte(manifests)
	dir := "/kustomization/" + ns + "/app"
	a := serveRender(arts, dir, "main@sha1:6666666666666666666666666666666666666666", data)
	started := time.Now().Add(-time.Minute)
	syncAsController(ctx, t, ks, a, data, started)
	f := &fixture{ns: ns, ks: ks, started: started.Truncate(time.Second), arts: arts, dir: dir}
	return f, func() string { return "/api/objects/kustomization/" + ns + "/app" }
}

func TestTreeShowsEachObjectsHealthAndWhatItOwns(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)

	// A ReplicaSet of the Deployment, as kube-controller-manager would
	// create it (envtest runs none).
	web := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "web"}, web)).To(Succeed())
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web-abc",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: web.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: web.Spec.Selector, Template: web.Spec.Template},
	}
	create(ctx, t, rs)
	// The hook of the last sync, as sync-controller created it.
	syncID := plan.SyncID(f.ks.Status.Sync.Digest, f.ks.Status.Sync.Generation, f.started)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "migrate", Labels: map[string]string{plan.HookSyncLabel: syncID}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "migrate", Image: "busybox"}}}}},
	}
	create(ctx, t, job)

	var page objectPage
	r := do(t, srv, http.MethodGet, base(), "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	r.decode(t, &page)
	g.Expect(page.Kind).To(Equal("Kustomization"))
	g.Expect(page.Sync.Phase).To(Equal(kustomizev1.PhaseSucceeded))
	g.Expect(page.Ready).To(Equal("Unknown"))
	g.Expect(page.Revision).To(Equal(f.ks.Status.LastAppliedRevision))
	g.Expect(page.Object["status"]).To(HaveKey("inventory"))
	g.Expect(page.Object["metadata"]).NotTo(HaveKey("managedFields"))
	g.Expect(page.Source.Kind).To(Equal(sourcev1.GitRepositoryKind))
	g.Expect(page.Source.Error).To(ContainSubstring("not found"))
	g.Expect(page.History.Syncs).To(HaveLen(1))
	g.Expect(page.History.Syncs[0].Digest).To(Equal(f.ks.Status.RenderedArtifact.Digest))

	byID := map[string]inspect.Node{}
	for _, n := range page.Tree {
		byID[n.ID] = n
	}
	g.Expect(byID).To(HaveLen(3), r.body)
	dep := byID["apps/Deployment/"+f.ns+"/web"]
	// No kube-controller-manager: the Deployment never becomes available.
	g.Expect(dep.Health).To(Equal(health.Progressing), r.body)
	g.Expect(dep.Reason).NotTo(BeEmpty())
	g.Expect(dep.Children).To(HaveLen(1))
	g.Expect(dep.Children[0].ID).To(Equal("apps/ReplicaSet/" + f.ns + "/web-abc"))
	g.Expect(byID["/ConfigMap/"+f.ns+"/settings"].Health).To(Equal(health.Healthy))

	g.Expect(page.Hooks).To(HaveLen(1), r.body)
	g.Expect(page.Hooks[0].ID).To(Equal("batch/Job/" + f.ns + "/migrate"))
	g.Expect(page.Hooks[0].Hook).To(Equal("PreSync"))
	// No kube-controller-manager runs the Job: it stays running.
	g.Expect(page.Hooks[0].Phase).To(Equal("Running"), r.body)
	g.Expect(page.Hooks[0].Health).NotTo(Equal(health.Missing), r.body)
	g.Expect(page.Hooks[0].Reason).NotTo(ContainSubstring("earlier sync"))

	// The Deployment becomes available: the tree says so.
	setStatus(ctx, t, web, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
	})
	r = do(t, srv, http.MethodGet, base(), "", "")
	r.decode(t, &page)
	for _, n := range page.Tree {
		if n.Kind == "Deployment" {
			g.Expect(n.Health).To(Equal(health.Healthy), r.body)
		}
	}
}

func TestLiveDiffShowsTheFieldAndWhoChangedIt(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"}}
	g.Expect(env.Client.Patch(ctx, web, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)), client.FieldOwner("kubectl-edit"))).To(Succeed())
	// An Event about it, as kube-controller-manager would record one.
	create(ctx, t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: f.ns, Name: "web.scaled"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: f.ns, Name: "web", UID: web.UID},
		Type:           corev1.EventTypeNormal, Reason: "ScalingReplicaSet", Message: "Scaled up replica set web-abc to 5",
		Source: corev1.EventSource{Component: "deployment-controller"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	})

	var page livePage
	r := do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape("apps/Deployment/"+f.ns+"/web"), "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	r.decode(t, &page)
	g.Expect(page.DiffUnavailable).To(BeNil(), r.body)
	g.Expect(page.Compared.Revision).To(Equal(f.ks.Status.RenderedArtifact.Revision))
	g.Expect(page.Diff).To(ContainElement(change{Path: "spec.replicas", Before: "5", After: "2", Manager: "kubectl-edit"}), r.body)
	g.Expect(page.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(5))
	g.Expect(page.Object["metadata"]).NotTo(HaveKey("managedFields"))
	g.Expect(page.Health.Status).To(Equal(health.Progressing))
	g.Expect(page.EventsUnavailable).To(BeNil(), r.body)
	g.Expect(page.Events).To(HaveLen(1))
	g.Expect(page.Events[0].Reason).To(Equal("ScalingReplicaSet"))

	t.Run("an id that is no object of the Kustomization", func(t *testing.T) {
		g := NewWithT(t)
		r := do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape("apps/Deployment/"+f.ns+"/other"), "", "")
		g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
		r = do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape("apps/Deployment/../web"), "", "")
		g.Expect(r.status).To(Equal(http.StatusBadRequest), r.String())
	})
}

func TestSecretValuesAreInNoResponse(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	const foreign = "f0reign-s3cret"
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "creds"}}
	g.Expect(env.Client.Patch(ctx, creds, client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"password":"`+foreign+`"}}`)), client.FieldOwner("kubectl-edit"))).To(Succeed())

	id := "/Secret/" + f.ns + "/creds"
	digest := f.ks.Status.RenderedArtifact.Digest
	var bodies []response
	bodies = append(bodies,
		do(t, srv, http.MethodGet, base(), "", ""),
		do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape(id), "", ""),
		do(t, srv, http.MethodGet, base()+"/revisions?from="+url.QueryEscape(digest)+"&to="+url.QueryEscape(digest), "", ""),
		do(t, srv, http.MethodPost, base()+"/ignore", "", `{"id":"`+id+`","path":"data.password"}`),
	)
	for _, r := range bodies {
		g.Expect(r.status).To(Equal(http.StatusOK), r.String())
		for _, v := range []string{secretFromGit, foreign} {
			g.Expect(r.body).NotTo(ContainSubstring(v))
			g.Expect(r.body).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(v))))
		}
	}
	var page livePage
	bodies[1].decode(t, &page)
	g.Expect(page.Object["data"]).To(Equal(map[string]any{"password": redactedValue}))
	g.Expect(page.DiffUnavailable).To(BeNil(), bodies[1].body)
	g.Expect(page.Diff).To(ContainElement(change{Path: "data.password", Before: `"<redacted>"`, After: `"<redacted>"`, Manager: "kubectl-edit"}))
}

func TestAUserWithoutRightsGets403(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	id := url.QueryEscape("apps/Deployment/" + f.ns + "/web")

	// No rights at all: the API server's 403 passes through.
	for _, path := range []string{base(), base() + "/live?id=" + id, base() + "/revisions"} {
		r := do(t, srv, http.MethodGet, path, "nobody", "")
		g.Expect(r.status).To(Equal(http.StatusForbidden), r.String())
		var e map[string]string
		r.decode(t, &e)
		g.Expect(e["error"]).To(ContainSubstring("forbidden"))
	}

	// A reader may see the page and the live object, not the dry-run
	// apply the diff is made of, nor patch an ignore rule in.
	grant(ctx, t, f.ns, "reader", "get", "list", "watch")
	g.Eventually(func() int { return do(t, srv, http.MethodGet, base(), "reader", "").status }, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
	r := do(t, srv, http.MethodGet, base()+"/live?id="+id, "reader", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var page livePage
	r.decode(t, &page)
	g.Expect(page.Object).NotTo(BeNil())
	g.Expect(page.Diff).To(BeEmpty())
	g.Expect(page.DiffUnavailable).NotTo(BeNil(), r.body)
	g.Expect(page.DiffUnavailable.Status).To(Equal(http.StatusForbidden), r.body)
	g.Expect(page.DiffUnavailable.Reason).To(ContainSubstring("dry-run apply"))

	r = do(t, srv, http.MethodPost, base()+"/ignore", "reader", `{"id":"apps/Deployment/`+f.ns+`/web","path":"spec.replicas"}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var answer ignoreAnswer
	r.decode(t, &answer)
	g.Expect(answer.MayApply).To(BeFalse())
	r = do(t, srv, http.MethodPost, base()+"/ignore", "reader", `{"id":"apps/Deployment/`+f.ns+`/web","path":"spec.replicas","apply":true}`)
	g.Expect(r.status).To(Equal(http.StatusForbidden), r.String())
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.ks), ks)).To(Succeed())
	g.Expect(ks.Spec.Ignore).To(BeEmpty())
}

func TestTheIgnoreRuleIsWhatTheAPIAccepts(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)

	r := do(t, srv, http.MethodPost, base()+"/ignore", "", `{"id":"apps/Deployment/`+f.ns+`/web","path":"spec.replicas"}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var answer ignoreAnswer
	r.decode(t, &answer)
	g.Expect(answer.Applied).To(BeFalse())
	g.Expect(answer.MayApply).To(BeTrue())

	// The YAML, given the rest of a Kustomization, is created as it is
	// under strict field validation: no field the API does not know.
	doc := map[string]any{}
	g.Expect(yaml.Unmarshal([]byte(answer.YAML), &doc)).To(Succeed())
	spec := doc["spec"].(map[string]any)
	spec["sourceRef"] = map[string]any{"kind": "GitRepository", "name": "repo"}
	spec["interval"] = "1m"
	spec["prune"] = true
	doc["metadata"].(map[string]any)["name"] = "with-rule"
	obj := &unstructured.Unstructured{Object: doc}
	g.Expect(env.Client.Create(ctx, obj, client.FieldValidation("Strict"))).To(Succeed())
	created := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "with-rule"}, created)).To(Succeed())
	g.Expect(created.Spec.Ignore).To(Equal([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"},
		Target: &kustomizev1.Selector{Group: "apps", Kind: "Deployment", Namespace: f.ns, Name: "web"}}}))

	// Applied, the rule takes the field out of the diff.
	r = do(t, srv, http.MethodPost, base()+"/ignore", "", `{"id":"apps/Deployment/`+f.ns+`/web","path":"/spec/replicas","apply":true}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	r.decode(t, &answer)
	g.Expect(answer.Applied).To(BeTrue())
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.ks), ks)).To(Succeed())
	g.Expect(ks.Spec.Ignore).To(Equal(created.Spec.Ignore))
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"}}
	g.Expect(env.Client.Patch(ctx, web, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":7}}`)), client.FieldOwner("kubectl-edit"))).To(Succeed())
	var page livePage
	r = do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape("apps/Deployment/"+f.ns+"/web"), "", "")
	r.decode(t, &page)
	g.Expect(page.DiffUnavailable).To(BeNil(), r.body)
	g.Expect(page.Diff).To(BeEmpty(), r.body)

	t.Run("bad requests", func(t *testing.T) {
		g := NewWithT(t)
		for _, body := range []string{
			`{"id":"apps/Deployment/` + f.ns + `/web"}`,
			`{"id":"Deployment/web","path":"spec.replicas"}`,
			`{"id":"apps/Deployment/` + f.ns + `/web","path":"spec.replicas","extra":1}`,
			`{"id":"apps/Deployment/` + f.ns + `/web","path":"/spec/~2"}`,
		} {
			r := do(t, srv, http.MethodPost, base()+"/ignore", "", body)
			g.Expect(r.status).To(Equal(http.StatusBadRequest), body+": "+r.String())
		}
		r := do(t, srv, http.MethodPost, base()+"/ignore", "", `{"id":"`+strings.Repeat("a", 2<<20)+`"}`)
		g.Expect(r.status).To(Equal(http.StatusRequestEntityTooLarge), r.String())
	})
}

func TestKustomizationRevisionsListTheHistoryAndDiffTwoServedRenders(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	const oldRev, curRev, goneRev, newRev = "main@sha1:5555555555555555555555555555555555555555",
		"main@sha1:6666666666666666666666666666666666666666", "main@sha1:4444444444444444444444444444444444444444",
		"main@sha1:7777777777777777777777777777777777777777"
	// An older render still served, one render-controller garbage-collected,
	// and a newer one not synced yet.
	older := serveRender(f.arts, f.dir, oldRev, []byte(strings.Replace(manifests, "mode: fast", "mode: slow", 1)))
	newer := serveRender(f.arts, f.dir, newRev, []byte(strings.Replace(manifests, "mode: fast", "mode: fastest", 1)))
	current := f.ks.Status.RenderedArtifact.Digest
	gone := "sha256:" + strings.Repeat("ab", 32)
	setStatus(ctx, t, f.ks, func(o *kustomizev1.Kustomization) {
		o.Status.RenderedArtifact = newer
		cur := o.Status.History[0]
		cur.TotalReconciliations = 2
		at := metav1.NewTime(cur.LastReconciled.Add(-time.Hour))
		o.Status.History = meta.History{cur,
			{Digest: older.Digest, FirstReconciled: at, LastReconciled: at, LastReconciledStatus: kustomizev1.HealthCheckFailedReason,
				TotalReconciliations: 1, Metadata: map[string]string{meta.HistoryRevisionKey: oldRev}},
			{Digest: gone, FirstReconciled: at, LastReconciled: at, LastReconciledStatus: meta.SucceededReason,
				TotalReconciliations: 1, Metadata: map[string]string{meta.HistoryRevisionKey: goneRev}},
		}
	})

	r := do(t, srv, http.MethodGet, base()+"/revisions", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var page revisionsPage
	r.decode(t, &page)
	g.Expect(page.Retained).To(ContainSubstring("status.history"))
	g.Expect(page.Revisions).To(HaveLen(4), r.body)
	summary := []string{}
	for _, rev := range page.Revisions {
		summary = append(summary, fmt.Sprintf("%s %s %s %d", rev.ID, rev.Revision, rev.Status, rev.Syncs))
		g.Expect(rev.Digest).To(Equal(rev.ID))
		g.Expect(rev.Time).NotTo(BeEmpty())
	}
	g.Expect(summary).To(Equal([]string{
		newer.Digest + " " + newRev + " rendered 0",
		current + " " + curRev + " Succeeded 2",
		older.Digest + " " + oldRev + " HealthCheckFailed 1",
		gone + " " + goneRev + " Succeeded 1",
	}), "the render not synced yet, then status.history newest first")

	// Two served renders of the history: their diff, by id or by revision.
	for _, q := range []string{"from=" + url.QueryEscape(older.Digest) + "&to=" + url.QueryEscape(current), "from=" + oldRev + "&to=" + curRev} {
		r = do(t, srv, http.MethodGet, base()+"/revisions?"+q, "", "")
		g.Expect(r.status).To(Equal(http.StatusOK), r.String())
		page = revisionsPage{}
		r.decode(t, &page)
		g.Expect(page.DiffUnavailable).To(BeNil(), r.body)
		g.Expect(page.Diff).To(Equal([]revisionChange{{Object: "/ConfigMap//settings", Action: diff.Configured, Path: "data.mode", Before: `"slow"`, After: `"fast"`}}), r.body)
	}
	// The newest render against the applied one.
	r = do(t, srv, http.MethodGet, base()+"/revisions?from="+curRev+"&to="+newRev, "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	page = revisionsPage{}
	r.decode(t, &page)
	g.Expect(page.Diff).To(Equal([]revisionChange{{Object: "/ConfigMap//settings", Action: diff.Configured, Path: "data.mode", Before: `"fast"`, After: `"fastest"`}}), r.body)

	// A render no longer served is named gone.
	r = do(t, srv, http.MethodGet, base()+"/revisions?from="+url.QueryEscape(gone)+"&to="+url.QueryEscape(current), "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	page = revisionsPage{}
	r.decode(t, &page)
	g.Expect(page.Diff).To(BeEmpty())
	g.Expect(page.DiffUnavailable).NotTo(BeNil(), r.body)
	g.Expect(page.DiffUnavailable.Gone).To(Equal([]string{gone}))

	r = do(t, srv, http.MethodGet, base()+"/revisions?from=nope&to="+url.QueryEscape(current), "", "")
	g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
}

func TestATreeForAUserWhoMayGetButNotListReadsObjectByObject(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	grant(ctx, t, f.ns, "getter", "get")
	// More ConfigMaps than a single read is used for, so they are listed
	// first, refused, and read one by one.
	for i := range 3 {
		create(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "extra-" + string(rune('a'+i))}})
	}
	setStatus(ctx, t, f.ks, func(o *kustomizev1.Kustomization) {
		for i := range 3 {
			o.Status.Inventory.Entries = append(o.Status.Inventory.Entries, kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "extra-" + string(rune('a'+i))})
		}
	})
	var r response
	g.Eventually(func() int { r = do(t, srv, http.MethodGet, base(), "getter", ""); return r.status }, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.Tree).To(HaveLen(6), r.body)
	for _, n := range page.Tree {
		g.Expect(n.Health).NotTo(Equal(health.Unknown), r.body)
	}
	// The ReplicaSets and Pods it may not list are said to be missing.
	g.Expect(strings.Join(page.TreeNotes, "\n")).To(ContainSubstring("ReplicaSets in namespace " + f.ns + " not listed (forbidden)"))
}

// grant lets user do verbs on every object of the core, apps, batch and
// kustomize groups in ns, as a Role bound to the user.
func grant(ctx context.Context, t *testing.T, ns, user string, verbs ...string) {
	t.Helper()
	create(ctx, t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps", "batch", kustomizev1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: verbs},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}},
	)
}

// TestTheTreeSaysNothingOfWhatAnsweredAnArtifactURL: a status's artifact
// URL is anyone's who may write the status. One steered at another API
// path is refused; one a server answers with an error is reported as one
// generic note, without its status, address or body (a port scanner's
// output otherwise).
func TestTheTreeSaysNothingOfWhatAnsweredAnArtifactURL(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	var hits atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "internal-banner", http.StatusTeapot)
	}))
	t.Cleanup(failing.Close)
	hex := strings.Repeat("a", 64)
	for _, tc := range []struct {
		url   string
		asked bool // the tests' artifact servers are on loopback, allowed here
	}{
		{"http://render-controller.plumb-system.svc/../../../../api/v1/nodes/n1/proxy/" + hex + ".yaml", false},
		{failing.URL + "/kustomization/" + f.ns + "/app/" + hex + ".yaml", true},
	} {
		hits.Store(0)
		setStatus(ctx, t, f.ks, func(k *kustomizev1.Kustomization) {
			k.Status.RenderedArtifact.URL, k.Status.RenderedArtifact.Digest = tc.url, "sha256:"+hex
		})
		var page objectPage
		r := do(t, srv, http.MethodGet, base(), "", "")
		g.Expect(r.status).To(Equal(http.StatusOK), r.String())
		r.decode(t, &page)
		notes := strings.Join(page.TreeNotes, "\n")
		g.Expect(notes).To(ContainSubstring("the rendered artifact could not be downloaded from render-controller"), tc.url)
		for _, leak := range []string{"418", "teapot", "internal-banner", "127.0.0.1", "nodes", "refused", hex} {
			g.Expect(strings.ToLower(notes)).NotTo(ContainSubstring(leak), tc.url)
		}
		g.Expect(hits.Load() > 0).To(Equal(tc.asked), tc.url)
	}
}

// The page offers a rule in two more forms: a jq path expression that
// finds a container by its name in the live object (so a reordered list
// keeps the rule right), and every field the manager that changed it
// writes. Each is one the API and sync-controller's ignorer accept, and
// applied, it takes the change out of the diff.
func TestTheIgnoreRuleAsJQOrManagerIsWhatTheAPIAccepts(t *testing.T) {
	g := NewWithT(t)
	f, base := newFixture(t)
	ctx := t.Context()
	srv := newServer(t)
	id := `"id":"apps/Deployment/` + f.ns + `/web"`

	r := do(t, srv, http.MethodPost, base()+"/ignore", "", `{`+id+`,"path":"spec.template.spec.containers[0].image","as":"jq"}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var answer ignoreAnswer
	r.decode(t, &answer)
	g.Expect(answer.Rule.JQPathExpressions).To(Equal([]string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}))
	g.Expect(answer.Rule.Paths).To(BeEmpty())

	r = do(t, srv, http.MethodPost, base()+"/ignore", "", `{`+id+`,"path":"spec.replicas","as":"manager","manager":"kubectl-edit"}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	answer = ignoreAnswer{}
	r.decode(t, &answer)
	g.Expect(answer.Rule.ManagedFieldsManagers).To(Equal([]string{"kubectl-edit"}))
	g.Expect(answer.Rule.Target).To(Equal(&kustomizev1.Selector{Group: "apps", Kind: "Deployment", Namespace: f.ns, Name: "web"}))

	// Applied, the manager's rule takes its change out of the diff.
	r = do(t, srv, http.MethodPost, base()+"/ignore", "", `{`+id+`,"path":"spec.replicas","as":"manager","manager":"kubectl-edit","apply":true}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.ks), ks)).To(Succeed())
	g.Expect(ks.Spec.Ignore).To(ContainElement(answer.Rule))
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"}}
	g.Expect(env.Client.Patch(ctx, web, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":9}}`)), client.FieldOwner("kubectl-edit"))).To(Succeed())
	var page livePage
	r = do(t, srv, http.MethodGet, base()+"/live?id="+url.QueryEscape("apps/Deployment/"+f.ns+"/web"), "", "")
	r.decode(t, &page)
	g.Expect(page.DiffUnavailable).To(BeNil(), r.body)
	g.Expect(page.Diff).To(BeEmpty(), r.body)

	for _, body := range []string{
		`{` + id + `,"path":"spec.replicas","as":"manager"}`,
		`{` + id + `,"path":"spec.replicas","as":"regex"}`,
	} {
		r := do(t, srv, http.MethodPost, base()+"/ignore", "", body)
		g.Expect(r.status).To(Equal(http.StatusBadRequest), body+": "+r.String())
	}
}

func TestJQPathOfSelectsNamedElements(t *testing.T) {
	live := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "env": []any{map[string]any{"name": "LEVEL", "value": "1"}}}},
		"args":       []any{"a", "b"},
	}, "metadata": map[string]any{"annotations": map[string]any{"example.com/owner": "x"}}}
	for path, want := range map[string]string{
		"spec.containers[0].image":                  `.spec.containers[] | select(.name == "app") | .image`,
		"spec.containers[0].env[0].value":           `.spec.containers[] | select(.name == "app") | .env[] | select(.name == "LEVEL") | .value`,
		"spec.containers[0]":                        `.spec.containers[] | select(.name == "app")`,
		"spec.containers[3].image":                  `.spec.containers[3].image`,
		"spec.args[1]":                              `.spec.args[1]`,
		`metadata.annotations["example.com/owner"]`: `.metadata.annotations["example.com/owner"]`,
	} {
		NewWithT(t).Expect(jqPathOf(path, live)).To(Equal(want), path)
		_, err := diff.NewIgnorer([]kustomizev1.IgnoreRule{{JQPathExpressions: []string{want}}})
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), want)
	}
}
