package request_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/request"
)

// A request sets the annotation to the token it returns, with the spec
// fields and annotations asked for in the same write, and keeps the
// object's other annotations.
func TestAReconcileRequestIsOneWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "repo", Annotations: map[string]string{"team": "a"}}}
	repo.Spec.Suspend = true
	c := fake.NewClientBuilder().WithScheme(kinds.NewScheme()).WithObjects(repo).Build()

	token, err := request.Reconcile(ctx, c, repo, map[string]any{"suspend": false}, map[string]string{"note": "resumed"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(token).NotTo(BeEmpty())

	got := &sourcev1.GitRepository{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(request.Annotation(got)).To(Equal(token))
	g.Expect(got.Annotations).To(HaveKeyWithValue(meta.ReconcileRequestAnnotation, token))
	g.Expect(got.Annotations).To(HaveKeyWithValue("note", "resumed"))
	g.Expect(got.Annotations).To(HaveKeyWithValue("team", "a"))
	g.Expect(got.Spec.Suspend).To(BeFalse())

	// A second request is a new token.
	again, err := request.Reconcile(ctx, c, got, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).NotTo(Equal(token))
}

// A request for an object that is not there fails, naming it.
func TestARequestForAMissingObjectFails(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(kinds.NewScheme()).Build()
	_, err := request.Reconcile(context.Background(), c, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gone"}}, nil, nil)
	g.Expect(err).To(MatchError(ContainSubstring("annotating apps/gone")))
}

// Flux's requestedAt is a request too, so `flux reconcile` and Flux's
// receivers trigger Plumb's kinds; with both, the later time is the
// request to answer.
func TestFluxsRequestedAtIsARequest(t *testing.T) {
	g := NewWithT(t)
	obj := func(ann map[string]string) client.Object {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	const early, late = "2026-12-05T10:00:00Z", "2026-12-05T10:00:01.5Z"
	g.Expect(request.Annotation(obj(nil))).To(BeEmpty())
	g.Expect(request.Annotation(obj(map[string]string{meta.FluxReconcileRequestAnnotation: early}))).To(Equal(early))
	g.Expect(request.Annotation(obj(map[string]string{meta.ReconcileRequestAnnotation: early}))).To(Equal(early))
	g.Expect(request.Annotation(obj(map[string]string{meta.ReconcileRequestAnnotation: early, meta.FluxReconcileRequestAnnotation: late}))).To(Equal(late))
	g.Expect(request.Annotation(obj(map[string]string{meta.ReconcileRequestAnnotation: late, meta.FluxReconcileRequestAnnotation: early}))).To(Equal(late))
	g.Expect(request.Annotation(obj(map[string]string{meta.ReconcileRequestAnnotation: "token", meta.FluxReconcileRequestAnnotation: late}))).
		To(Equal("token"), "Plumb's when either is not a time")
}
