package overview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/ui/internal/live"
)

func condition(t, status, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

func inventory(n int) *kustomizev1.Inventory {
	inv := &kustomizev1.Inventory{}
	for i := range n {
		inv.Entries = append(inv.Entries, kustomizev1.InventoryEntry{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "apps", Name: fmt.Sprint("web-", i)})
	}
	return inv
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo"}},
	}
}

func TestAKustomizationRowSaysItsStatusHealthDriftAndSource(t *testing.T) {
	finished := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	detected := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	for name, tc := range map[string]struct {
		set        func(*kustomizev1.Kustomization)
		status     string
		health     Health
		driftState string
	}{
		"ready and healthy, drift corrected": {func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "True", meta.SucceededReason, "applied"),
				condition(kustomizev1.HealthyCondition, "True", meta.SucceededReason, "all 3 objects are healthy")}
			k.Status.Drift = &kustomizev1.DriftStatus{Count: 1, LastDetected: &detected}
		}, StatusReady, Health{Healthy: 3}, DriftCorrected},
		"a health timeout names the objects that are not healthy": {func(k *kustomizev1.Kustomization) {
			msg := "timed out waiting for health: Deployment/apps/web-0 is Progressing: 1 of 2 replicas available; apps/Deployment/apps/web-1 is Degraded: ProgressDeadlineExceeded"
			k.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, msg),
				condition(meta.ReconcilingCondition, "True", meta.ProgressingWithRetryReason, "retrying"),
				condition(kustomizev1.HealthyCondition, "False", kustomizev1.HealthCheckFailedReason, msg)}
		}, StatusNotReady, Health{Healthy: 1, Progressing: 1, Degraded: 1}, DriftNone},
		"working on a new generation, drift reported": {func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "False", kustomizev1.DriftDetectedReason, "differs"),
				condition(meta.ReconcilingCondition, "True", "Progressing", "applying"),
				condition(kustomizev1.DriftedCondition, "True", kustomizev1.DriftDetectedReason, "differs")}
			k.Status.Drift = &kustomizev1.DriftStatus{Count: 2, LastDetected: &detected}
		}, StatusProgressing, Health{Unknown: 3}, DriftDrifted},
		"suspended, drift contested": {func(k *kustomizev1.Kustomization) {
			k.Spec.Suspend = true
			k.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "True", meta.SucceededReason, "applied")}
			k.Status.Drift = &kustomizev1.DriftStatus{Contested: []kustomizev1.ContestedDrift{{Object: "Deployment/apps/web-0", Fields: []string{"spec.replicas"}, Manager: "hpa"}}}
		}, StatusSuspended, Health{Unknown: 3}, DriftContested},
		"never reconciled": {func(k *kustomizev1.Kustomization) {}, StatusProgressing, Health{Unknown: 3}, DriftNone},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			k := kustomization("apps", "web")
			k.Status.Inventory = inventory(3)
			k.Status.LastAppliedRevision = "main@sha1:abc"
			k.Status.Sync = &kustomizev1.SyncProgress{Phase: kustomizev1.PhaseSucceeded, FinishedAt: &finished}
			tc.set(k)
			r := rowOf(k)
			g.Expect(r.status).To(Equal(tc.status))
			g.Expect(*r.Health).To(Equal(tc.health))
			g.Expect(r.Drift.State).To(Equal(tc.driftState))
			g.Expect(r.Revision).To(Equal("main@sha1:abc"))
			g.Expect(*r.LastSync).To(Equal(finished.UTC()))
			g.Expect(*r.Source).To(Equal(Ref{Kind: "GitRepository", Namespace: "apps", Name: "repo"}), "the source defaults to the Kustomization's namespace")
		})
	}
}

func TestAGitRepositoryRowHasItsArtifactsRevisionAndNoHealth(t *testing.T) {
	g := NewWithT(t)
	updated := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "repo"}}
	repo.Status.Artifact = &meta.Artifact{Revision: "main@sha1:def", LastUpdateTime: updated}
	repo.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "False", sourcev1.AuthenticationFailedReason, "authentication required")}
	r := rowOf(repo)
	g.Expect(r.Kind).To(Equal("GitRepository"))
	g.Expect(r.Ready).To(Equal("False"))
	g.Expect(r.status).To(Equal(StatusNotReady))
	g.Expect(r.Revision).To(Equal("main@sha1:def"))
	g.Expect(*r.LastSync).To(Equal(updated.UTC()))
	g.Expect(r.Health).To(BeNil())
	g.Expect(r.Drift).To(BeNil())
}

// Every source kind of the overview gets its row the same way, an
// OCIRepository's too: Ready, suspension and the artifact's revision.
func TestAnOCIRepositoryRowIsASourceRow(t *testing.T) {
	g := NewWithT(t)
	updated := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "manifests"}}
	repo.Spec.Suspend = true
	repo.Status.Artifact = &meta.Artifact{Revision: "1.2.0@sha256:abc", LastUpdateTime: updated}
	repo.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "True", meta.SucceededReason, "stored artifact")}
	r := rowOf(repo)
	g.Expect(r).NotTo(BeNil())
	g.Expect(r.Kind).To(Equal("OCIRepository"))
	g.Expect(r.Ready).To(Equal("True"))
	g.Expect(r.Suspended).To(BeTrue())
	g.Expect(r.status).To(Equal(StatusSuspended))
	g.Expect(r.Revision).To(Equal("1.2.0@sha256:abc"))
	g.Expect(*r.LastSync).To(Equal(updated.UTC()))
}

// An ObjectSet is a row of its own: Ready and suspension, no revision,
// source, health or drift.
func TestAnObjectSetRowHasItsReadyAndNothingApplied(t *testing.T) {
	g := NewWithT(t)
	set := &setv1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "fleet"}}
	set.Status.Conditions = []metav1.Condition{condition(meta.ReadyCondition, "False", setv1.TemplateFailedReason, "element 2: bad")}
	r := rowOf(set)
	g.Expect(r).NotTo(BeNil())
	g.Expect(r.Kind).To(Equal("ObjectSet"))
	g.Expect(r.Ready).To(Equal("False"))
	g.Expect(r.Reason).To(Equal(setv1.TemplateFailedReason))
	g.Expect(r.status).To(Equal(StatusNotReady))
	g.Expect(r.Source).To(BeNil())
	g.Expect(r.Health).To(BeNil())
	g.Expect(r.Drift).To(BeNil())
}

// allowed is a viewer that may do anything, or list only in namespaces.
type allowed struct{ namespaces map[string]bool }

func (a allowed) MayDo(_ context.Context, verb, _, _, namespace, _ string) bool {
	if a.namespaces == nil {
		return true
	}
	return verb == "list" && a.namespaces[namespace]
}

// storeOf returns a store of n Kustomizations spread over 20 namespaces,
// every 10th not ready and every 50th suspended.
func storeOf(n int) *Store {
	s := NewStore()
	for i := range n {
		k := kustomization(fmt.Sprintf("team-%02d", i%20), fmt.Sprintf("app-%04d", i))
		k.Status.Inventory = inventory(3)
		ready := condition(meta.ReadyCondition, "True", meta.SucceededReason, "applied")
		if i%10 == 0 {
			ready = condition(meta.ReadyCondition, "False", kustomizev1.ApplyFailedReason, "apply failed")
		}
		k.Status.Conditions = []metav1.Condition{ready}
		k.Spec.Suspend = i%50 == 0
		s.Set(k)
	}
	return s
}

func TestThePageIsFilteredCountedAndPaged(t *testing.T) {
	g := NewWithT(t)
	h := &Handler{Store: storeOf(1000)}
	ctx := context.Background()

	all := h.Page(ctx, allowed{}, Query{Limit: DefaultLimit})
	g.Expect(all.Total).To(Equal(1000))
	g.Expect(all.Counts).To(Equal(map[string]int{StatusReady: 900, StatusNotReady: 80, StatusProgressing: 0, StatusSuspended: 20}))
	g.Expect(all.Items).To(HaveLen(DefaultLimit))
	g.Expect(all.Items[0].Namespace+"/"+all.Items[0].Name).To(Equal("team-00/app-0000"), "sorted by kind, namespace, name")
	g.Expect(all.Items[1].Name).To(Equal("app-0020"))

	notReady := h.Page(ctx, allowed{}, Query{Status: StatusNotReady, Offset: 70, Limit: 500})
	g.Expect(notReady.Total).To(Equal(80))
	g.Expect(notReady.Items).To(HaveLen(10), "the last 10 of 80")
	g.Expect(notReady.Counts[StatusReady]).To(Equal(900), "the counts ignore the status filter")

	one := h.Page(ctx, allowed{}, Query{Text: "app-0042", Limit: 10})
	g.Expect(one.Total).To(Equal(1))
	g.Expect(one.Items[0].Namespace).To(Equal("team-02"))

	mine := h.Page(ctx, allowed{namespaces: map[string]bool{"team-03": true}}, Query{Limit: 500})
	g.Expect(mine.Total).To(Equal(50))
	for _, r := range mine.Items {
		g.Expect(r.Namespace).To(Equal("team-03"))
	}
	g.Expect(h.Page(ctx, nil, Query{Limit: 500}).Total).To(BeZero(), "no viewer, no rows")
}

// BenchmarkOverview measures one page of the overview over 1,000
// Kustomizations (the size), its JSON included, with the access
// reviews answered from the session's cache as they are after a user's
// first page.
func BenchmarkOverview(b *testing.B) {
	h := &Handler{Store: storeOf(1000)}
	ctx := context.Background()
	viewer := allowed{namespaces: map[string]bool{}}
	for i := range 20 {
		viewer.namespaces[fmt.Sprintf("team-%02d", i)] = true
	}
	b.ReportAllocs()
	for b.Loop() {
		p := h.Page(ctx, viewer, Query{Text: "app", Limit: DefaultLimit})
		if p.Total != 1000 {
			b.Fatalf("total %d", p.Total)
		}
		if err := json.NewEncoder(io.Discard).Encode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTheStoreTellsOfEachAddUpdateAndDelete(t *testing.T) {
	g := NewWithT(t)
	s := NewStore()
	var got []string
	s.OnChange = func(c live.Change) { got = append(got, c.Reason+" "+c.Kind+" "+c.Namespace+"/"+c.Name) }
	k := kustomization("apps", "web")
	s.Set(k)
	s.Set(k)
	s.Set(&corev1.ConfigMap{}) // not a kind of the overview
	g.Expect(s.Rows()).To(HaveLen(1))
	s.Delete(k)
	g.Expect(s.Rows()).To(BeEmpty())
	g.Expect(got).To(Equal([]string{"Added Kustomization apps/web", "Updated Kustomization apps/web", "Deleted Kustomization apps/web"}))
}
