package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
)

// checkReferences refuses, under --no-cross-namespace-refs, a dependsOn or
// healthChecks entry in another namespace — a stall, since only a spec
// change fixes it — and lets everything through without the flag.
func TestCheckReferencesStallsOnAnotherNamespace(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refuse  bool
		spec    kustomizev1.KustomizationSpec
		stalled string // substring of the message; "" for no error
	}{
		{name: "same namespace", refuse: true, spec: kustomizev1.KustomizationSpec{
			DependsOn:    []meta.DependencyReference{{Name: "db"}, {Name: "cache", Namespace: "team"}},
			HealthChecks: []kustomizev1.NamespacedObjectKindReference{{Kind: "Deployment", Name: "web", Namespace: "team"}},
		}},
		{name: "dependsOn elsewhere", refuse: true, spec: kustomizev1.KustomizationSpec{
			DependsOn: []meta.DependencyReference{{Name: "db", Namespace: "other"}},
		}, stalled: "dependsOn other/db is outside namespace team"},
		{name: "healthChecks elsewhere", refuse: true, spec: kustomizev1.KustomizationSpec{
			HealthChecks: []kustomizev1.NamespacedObjectKindReference{{Kind: "Deployment", Name: "web", Namespace: "other"}},
		}, stalled: "healthChecks Deployment other/web is outside namespace team"},
		{name: "elsewhere without the flag", refuse: false, spec: kustomizev1.KustomizationSpec{
			DependsOn: []meta.DependencyReference{{Name: "db", Namespace: "other"}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"}, Spec: tt.spec}
			s := &syncRun{r: &Syncer{NoCrossNamespaceRefs: tt.refuse}, obj: ks, app: kustomization{ks}, spec: kustomization{ks}.spec(), out: ks.DeepCopy()}
			err := s.checkReferences(context.Background())
			if tt.stalled == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var e *reconcile.Error
			g.Expect(err).To(BeAssignableToTypeOf(e))
			e = err.(*reconcile.Error)
			g.Expect(e.Policy).To(Equal(reconcile.Stall))
			g.Expect(e.Reason).To(Equal(meta.InvalidSpecReason))
			g.Expect(e.Error()).To(ContainSubstring(tt.stalled))
		})
	}
}

// A Kustomization whose first render failed, or waits for its source, has
// nothing to sync: the step fails with render-controller's reason and
// records no event of its own, render-controller having recorded the
// failure (a wait records none).
func TestAFirstRenderThatFailedIsNotRecordedAgain(t *testing.T) {
	// A failed render is a retried failure; render-controller waiting for
	// its source is a wait (logged as one, not as a failed reconcile),
	// looked at again after the retry interval if no status update comes.
	for reason, want := range map[string]reconcile.Policy{
		kustomizev1.BuildFailedReason: reconcile.Retry,
		meta.DependencyNotReadyReason: reconcile.Wait,
	} {
		t.Run(reason, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1}}
			ks.Spec.RetryInterval = &metav1.Duration{Duration: 42 * time.Second}
			ks.Status.Conditions = []metav1.Condition{{
				Type: kustomizev1.RenderedCondition, Status: metav1.ConditionFalse,
				Reason: reason, Message: "what render-controller said", ObservedGeneration: 1,
			}}
			s := &syncRun{obj: ks, app: kustomization{ks}, spec: kustomization{ks}.spec(), out: ks.DeepCopy()}
			err := s.loadManifests(context.Background())
			var e *reconcile.Error
			g.Expect(errors.As(err, &e)).To(BeTrue(), "%v", err)
			g.Expect(e.Policy).To(Equal(want))
			g.Expect(e.Reason).To(Equal(reason))
			g.Expect(e.Error()).To(Equal("what render-controller said"))
			if want == reconcile.Wait {
				g.Expect(e.RequeueAfter).To(Equal(42 * time.Second))
			} else {
				g.Expect(e.Quiet).To(BeTrue(), "render-controller recorded the failure's event")
			}
		})
	}
}

// report records the revision applied; while render-controller fails on
// the current generation it turns the applied sync into a retried failure
// with render-controller's reason and no event of its own.
func TestReportKeepsTheLastGoodRevisionThroughARenderFailure(t *testing.T) {
	g := NewWithT(t)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 2}}
	s := &syncRun{obj: ks, out: ks.DeepCopy(), revision: "main@sha1:good"}
	g.Expect(s.report(context.Background())).To(Succeed())
	g.Expect(s.st.LastAppliedRevision).To(Equal("main@sha1:good"))

	s = &syncRun{obj: ks, out: ks.DeepCopy(), revision: "main@sha1:good", renderFailure: &metav1.Condition{
		Type: kustomizev1.RenderedCondition, Status: metav1.ConditionFalse,
		Reason: kustomizev1.BuildFailedReason, Message: "kustomization.yaml: bad patch", ObservedGeneration: 2,
	}}
	err := s.report(context.Background())
	var e *reconcile.Error
	g.Expect(err).To(BeAssignableToTypeOf(e))
	e = err.(*reconcile.Error)
	g.Expect(e.Policy).To(Equal(reconcile.Retry))
	g.Expect(e.Reason).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(e.Quiet).To(BeTrue(), "render-controller recorded the failure's event")
	g.Expect(e.Error()).To(Equal("kustomization.yaml: bad patch (still applying the last good revision main@sha1:good)"))
	g.Expect(s.st.LastAppliedRevision).To(Equal("main@sha1:good"))
}
