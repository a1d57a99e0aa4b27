package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/healthexpr"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// answers keeps the answer of every apply (a PATCH of a managed object) by
// the object's name, with the request's count.
type answers struct {
	mu      sync.Mutex
	byName  map[string]answerSeen
	patches int
}

type answerSeen struct {
	contentType string
	body        string
}

func (a *answers) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.Method != http.MethodPatch || req.URL.Query().Get("dryRun") != "" {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		name := req.URL.Path[strings.LastIndexByte(req.URL.Path, '/')+1:]
		a.mu.Lock()
		defer a.mu.Unlock()
		a.byName[name] = answerSeen{contentType: resp.Header.Get("Content-Type"), body: string(body)}
		a.patches++
		return resp, err
	})
}

func (a *answers) take() (map[string]answerSeen, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, n := a.byName, a.patches
	a.byName, a.patches = map[string]answerSeen{}, 0
	return m, n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A write of a kind whose health is its existence is answered with the
// object's metadata in protobuf, not the whole object in JSON; a
// Deployment's and a LoadBalancer's answers stay whole, and their health
// is still judged from the answer. What the Result carries of each is
// what the API server stored.
func TestApplyAsksForMetadataWhereHealthIsExistence(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	seen := &answers{byName: map[string]answerSeen{}}
	e := newEnvEngine(t, seen.wrap)
	ns, err := e.env.Namespace(ctx, "answer")
	g.Expect(err).NotTo(HaveOccurred())
	objs := mixedObjects(ns, 3) // configmap-0000, service-0001 (headless), deployment-0002
	objs = append(objs, loadBalancer(ns))
	owner := manage.Owner{Namespace: ns, Name: "app"}

	results := e.applyAll(t, objs, owner)
	got, patches := seen.take()
	g.Expect(patches).To(Equal(4))
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.ID.Name] = r
		g.Expect(r.Err).NotTo(HaveOccurred())
		g.Expect(r.Action).To(Equal(diff.Created), r.ID.String())
		g.Expect(r.Written).To(BeTrue(), r.ID.String())
	}

	for _, name := range []string{"configmap-0000", "service-0001"} {
		g.Expect(got[name].contentType).To(HavePrefix("application/vnd.kubernetes.protobuf"), name)
		g.Expect(got[name].body).To(ContainSubstring("PartialObjectMetadata"), name)
		g.Expect(got[name].body).To(ContainSubstring(manage.AppliedHashAnnotation), name)
	}
	g.Expect(got["configmap-0000"].body).NotTo(ContainSubstring("example.invalid"), "no data in the answer")
	g.Expect(got["service-0001"].body).NotTo(ContainSubstring("sessionAffinity"), "no spec in the answer (its defaults)")
	for _, name := range []string{"deployment-0002", "balancer"} {
		g.Expect(got[name].contentType).To(HavePrefix("application/json"), name)
		g.Expect(got[name].body).To(ContainSubstring(`"spec"`), name)
	}

	// What a Result carries of a metadata answer is the stored object's
	// metadata: the version the write is stored at, the stamp.
	for _, name := range []string{"configmap-0000", "service-0001"} {
		r := byName[name]
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(r.Object.GroupVersionKind())
		g.Expect(e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)).To(Succeed())
		g.Expect(r.Object.GetKind()).To(Equal(live.GetKind()))
		g.Expect(r.Object.GetAPIVersion()).To(Equal("v1"))
		g.Expect(r.Object.GetResourceVersion()).To(Equal(live.GetResourceVersion()), name)
		g.Expect(r.Object.GetUID()).To(Equal(live.GetUID()), name)
		g.Expect(r.Object.GetLabels()).To(Equal(live.GetLabels()), name)
		g.Expect(r.Object.GetAnnotations()).To(HaveKeyWithValue(manage.AppliedHashAnnotation, live.GetAnnotations()[manage.AppliedHashAnnotation]), name)
		g.Expect(r.Object.Object).To(HaveKey("metadata"))
		g.Expect(r.Object.Object).NotTo(HaveKey("data"))
		g.Expect(r.Object.Object).NotTo(HaveKey("spec"))
		g.Expect(health.Evaluate(r.Object).Status).To(Equal(health.Healthy), name)
	}
	g.Expect(objs[0].GetResourceVersion()).To(BeEmpty(), "the desired object is left as it was")

	// A Deployment's health is still read from its answer: no
	// kube-controller-manager runs, so it has no status and is
	// Progressing, which only the whole object can tell.
	deployment := byName["deployment-0002"].Object
	g.Expect(deployment.Object).To(HaveKey("spec"))
	replicas, _, _ := unstructured.NestedInt64(deployment.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(1)))
	g.Expect(health.Evaluate(deployment).Status).To(Equal(health.Progressing))
	g.Expect(health.Evaluate(byName["balancer"].Object).Status).To(Equal(health.Progressing), "a LoadBalancer waits for its address")
}

// The records taken from a metadata answer are those the watch cache
// shows: the next sync of the same objects sends no request, and a
// foreign write to one is drift, found, named and reverted.
func TestMetadataAnswerRecordsSpareAndFindDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	seen := &answers{byName: map[string]answerSeen{}}
	e := newEnvEngine(t, seen.wrap)
	ns, err := e.env.Namespace(ctx, "answer-records")
	g.Expect(err).NotTo(HaveOccurred())
	owner := manage.Owner{Namespace: ns, Name: "app"}
	desired := func() []*unstructured.Unstructured { return mixedObjects(ns, 6) }

	e.applyAll(t, desired(), owner)
	_, patches := seen.take()
	g.Expect(patches).To(Equal(6))
	// The watch cache has every object at the version the apply stored.
	g.Eventually(func(g Gomega) {
		for _, o := range desired() {
			live, err := e.watcher.Lookup(ctx, o.GroupVersionKind(), ns, o.GetName())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(live).NotTo(BeNil())
			rec, ok := e.records.get(object.IDOf(o))
			g.Expect(ok).To(BeTrue())
			g.Expect(rec.version).To(Equal(versionOf(live)))
		}
	}).WithTimeout(10 * time.Second).Should(Succeed())

	results := e.applyAll(t, desired(), owner)
	_, patches = seen.take()
	g.Expect(patches).To(BeZero(), "nothing changed: no request")
	for _, r := range results {
		g.Expect(r.Action).To(Equal(diff.Unchanged), r.ID.String())
		g.Expect(r.Written).To(BeFalse(), r.ID.String())
	}

	// Another writer changes the ConfigMap.
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	g.Expect(e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "configmap-0000"}, cm)).To(Succeed())
	g.Expect(unstructured.SetNestedField(cm.Object, "edited", "data", "key")).To(Succeed())
	g.Expect(e.client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		live, err := e.watcher.Lookup(ctx, cm.GroupVersionKind(), ns, cm.GetName())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(live.ResourceVersion).To(Equal(cm.GetResourceVersion()))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	results = e.applyAll(t, desired(), owner)
	_, patches = seen.take()
	g.Expect(patches).To(Equal(1), "only the drifted object is written")
	var drifted []Result
	for _, r := range results {
		if r.Drift {
			drifted = append(drifted, r)
		}
	}
	g.Expect(drifted).To(HaveLen(1))
	d := drifted[0]
	g.Expect(d.ID.Name).To(Equal("configmap-0000"))
	g.Expect(d.Action).To(Equal(diff.Configured))
	g.Expect(d.Written).To(BeTrue())
	g.Expect(d.Managers).To(ConsistOf("kubectl-edit"))
	g.Expect(d.FieldManagers).To(HaveKeyWithValue("data.key", "kubectl-edit"))
	g.Expect(e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "configmap-0000"}, cm)).To(Succeed())
	g.Expect(cm.Object["data"]).To(HaveKeyWithValue("key", "configmap-0000"), "reverted")
	g.Expect(d.Object.GetResourceVersion()).To(Equal(cm.GetResourceVersion()))
	rec, ok := e.records.get(d.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(rec).To(Equal(recordOf(rec.hash, cm)), "the record is of the reverted object")
}

// For every kind answered with metadata, pkg/health's verdict on the
// metadata is its verdict on the whole object: nothing its rules read is
// left out. Kinds whose health reads more, and an engine with health
// checks in CEL, ask for the whole object.
func TestAnswerIsMetadataOnlyWhereHealthReadsNoMore(t *testing.T) {
	g := NewWithT(t)
	e := New(nil, nil, nil, 1)
	whole := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": "b"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": map[string]any{"a": "Yg=="}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": false}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": []any{}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "roleRef": map[string]any{"kind": "ClusterRole", "name": "x"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"clusterIP": "None"}, "status": map[string]any{}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "NodePort"}, "status": map[string]any{}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "ClusterIP"}}},
	}
	for _, o := range whole {
		o.SetName("x")
		o.SetNamespace("ns")
		g.Expect(e.answerIsMetadata(o, false)).To(BeTrue(), o.GetKind())
		stored := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "7"}}
		meta := metadataOnly(o, stored)
		g.Expect(health.Evaluate(meta)).To(Equal(health.Evaluate(o)), o.GetKind())
		g.Expect(meta.GroupVersionKind()).To(Equal(o.GroupVersionKind()))
	}
	for _, o := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "LoadBalancer"}}},
		// No type in Git: another writer may have made it a LoadBalancer.
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"ports": []any{}}}},
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}},
		{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job"}},
		{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "ConfigMap"}},
	} {
		g.Expect(e.answerIsMetadata(o, false)).To(BeFalse(), o.GetAPIVersion()+" "+o.GetKind())
		g.Expect(e.answerIsMetadata(o, true)).To(BeTrue(), "nothing waits: "+o.GetAPIVersion()+" "+o.GetKind())
		// A wait given such an answer reads the object.
		stored := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "7"}}
		g.Expect(e.answerTellsHealth(metadataOnly(o, stored), o)).To(BeFalse(), o.GetAPIVersion()+" "+o.GetKind())
		// The API server's whole answer of each has a spec (and a status).
		answer := o.DeepCopy()
		answer.Object["status"] = map[string]any{}
		g.Expect(e.answerTellsHealth(answer, o)).To(BeTrue(), "a whole answer: "+o.GetAPIVersion()+" "+o.GetKind())
	}
	checks, err := healthexpr.Compile([]kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "Secret", Current: "true"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.WithHealthChecks(checks).answerIsMetadata(whole[0], false)).To(BeFalse(), "health checks in CEL may read any field")
	stored := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "7"}}
	g.Expect(e.WithHealthChecks(checks).answerTellsHealth(metadataOnly(whole[0], stored), whole[0])).To(BeFalse(), "health checks in CEL may read any field")
	g.Expect(e.answerTellsHealth(metadataOnly(whole[0], stored), whole[0])).To(BeTrue(), "a ConfigMap's health is its existence")
}

// A write that nothing waits on (Options.NotWaitedOn) is answered with
// metadata whatever its kind; a health wait given that answer reads the
// object rather than judge it: a LoadBalancer without its address, which
// its metadata alone would pass as Healthy, is still Progressing.
func TestAnswersNobodyWaitsOnAreReadAgainByAWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	seen := &answers{byName: map[string]answerSeen{}}
	e := newEnvEngine(t, seen.wrap)
	ns, err := e.env.Namespace(ctx, "unwaited")
	g.Expect(err).NotTo(HaveOccurred())
	lb := loadBalancer(ns)
	objs := append(mixedObjects(ns, 3), lb)
	owner := manage.Owner{Namespace: ns, Name: "app"}
	hashes, err := e.Prepare(objs, Options{Owner: owner})
	g.Expect(err).NotTo(HaveOccurred())
	known := map[object.ID]*unstructured.Unstructured{}
	for _, group := range kindGroups(objs) {
		results, err := e.ApplySet(ctx, group, hashes, Options{Owner: owner, NotWaitedOn: true})
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range results {
			g.Expect(r.Written).To(BeTrue(), r.ID.String())
			g.Expect(r.Object.Object).NotTo(HaveKey("spec"), r.ID.String())
			known[r.ID] = r.Object
		}
	}
	got, patches := seen.take()
	g.Expect(patches).To(Equal(4))
	for _, name := range []string{"configmap-0000", "service-0001", "deployment-0002", "balancer"} {
		g.Expect(got[name].contentType).To(HavePrefix("application/vnd.kubernetes.protobuf"), name)
		g.Expect(got[name].body).To(ContainSubstring("PartialObjectMetadata"), name)
		g.Expect(got[name].body).NotTo(ContainSubstring(`"spec"`), name)
	}
	balancer := object.IDOf(lb)
	g.Expect(health.Evaluate(known[balancer]).Status).To(Equal(health.Healthy), "its metadata alone says nothing of its address")

	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = e.WaitHealthy(waitCtx, objs, known, nil)
	var timeout *HealthTimeoutError
	g.Expect(errors.As(err, &timeout)).To(BeTrue(), "the wait must time out, not pass: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("balancer"))
	g.Expect(err.Error()).To(ContainSubstring("deployment-0002"))
	g.Expect(err.Error()).NotTo(ContainSubstring("configmap-0000"), "a ConfigMap is judged from its metadata answer")
}

// loadBalancer is a Service of type LoadBalancer named balancer, whose
// health waits for an address no controller gives it here.
func loadBalancer(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "balancer", "namespace": ns},
		"spec": map[string]any{"type": "LoadBalancer", "selector": map[string]any{"app": "x"},
			"ports": []any{map[string]any{"port": int64(80)}}}}}
}
