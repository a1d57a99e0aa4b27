package reconcile_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, testenv.WithoutNATS())) }

// markerRE matches message.Truncate's marker at the end of a message.
const markerRE = `… \([0-9,]+ more bytes\)$`

// A render error quoting a 40 KB patch is twice the API server's cap on a
// condition message. Written through ApplyStatus, every message of the
// status — the condition's and status.sync.message — arrives cut to
// message.MaxBytes, so the write is accepted.
func TestApplyStatusBoundsEveryMessage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	ns, err := env.Namespace(ctx, "status")
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour},
		},
	}
	g.Expect(c.Create(ctx, ks)).To(Succeed())

	huge := "kustomize build failed: " + strings.Repeat("p", 80_000)
	status := func() map[string]any {
		return map[string]any{
			"conditions": []any{map[string]any{
				"type": kustomizev1.RenderedCondition, "status": "False", "reason": kustomizev1.BuildFailedReason,
				"message": huge, "observedGeneration": ks.Generation, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
			}},
			"sync": map[string]any{"phase": kustomizev1.PhaseFailed, "wave": 0, "message": huge},
		}
	}

	// The premise: the API server refuses the message as it is.
	u := &unstructured.Unstructured{Object: map[string]any{"status": status()}}
	u.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind))
	u.SetNamespace(ns)
	u.SetName("app")
	err = c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"), client.ForceOwnership)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the API server accepted an 80 KB condition message: %v", err)

	created := ks.ResourceVersion
	g.Expect(reconcile.ApplyStatus(ctx, c, ks, "test", status())).To(Succeed())

	var got kustomizev1.Kustomization
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ks), &got)).To(Succeed())
	// ks carries the version the write is stored at.
	g.Expect(ks.ResourceVersion).NotTo(Equal(created))
	g.Expect(ks.ResourceVersion).To(Equal(got.ResourceVersion))
	rendered := conditions.Get(&got, kustomizev1.RenderedCondition)
	g.Expect(rendered).NotTo(BeNil())
	g.Expect(rendered.Reason).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(got.Status.Sync).NotTo(BeNil())
	for field, msg := range map[string]string{"conditions[Rendered].message": rendered.Message, "sync.message": got.Status.Sync.Message} {
		g.Expect(len(msg)).To(BeNumerically("<=", message.MaxBytes), field)
		g.Expect(msg).To(HavePrefix("kustomize build failed: ppp"), field)
		g.Expect(msg).To(MatchRegexp(markerRE), field)
	}
}

// ApplyStatus reads back only what it needs of the write: the API server
// answers it with the object's metadata (PartialObjectMetadata), not the
// whole Kustomization with its spec and status, and the version the write
// is stored at is still what ks carries after it. What it sends is the
// same server-side apply: another manager's status fields stay.
func TestApplyStatusReadsBackOnlyMetadata(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "status-meta")
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour},
			Path:      "./" + strings.Repeat("deep/", 200),
		},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	g.Expect(reconcile.ApplyStatus(ctx, env.Client, ks, "other", map[string]any{"lastAppliedRevision": "main@sha1:other"})).To(Succeed())

	var answers []string
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/status") {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			answers = append(answers, string(body))
			return resp, err
		})
	})
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	status := map[string]any{"conditions": []any{map[string]any{
		"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason,
		"message": "rendered", "observedGeneration": ks.Generation, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}}}
	g.Expect(reconcile.ApplyStatus(ctx, c, ks, "test", status)).To(Succeed())

	// The answer is in protobuf, which the API server offers for
	// PartialObjectMetadata even of a custom resource; its type names the
	// kind, and its strings are there as they are.
	g.Expect(answers).To(HaveLen(1))
	g.Expect(answers[0]).To(ContainSubstring("PartialObjectMetadata"), "the answer: %q", answers[0])
	g.Expect(answers[0]).To(ContainSubstring(ks.Name))
	g.Expect(answers[0]).NotTo(ContainSubstring("deep/deep/"), "no spec in the answer")
	g.Expect(answers[0]).NotTo(ContainSubstring("main@sha1:other"), "no status in the answer")

	var got kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &got)).To(Succeed())
	g.Expect(ks.ResourceVersion).To(Equal(got.ResourceVersion), "ks carries the version the write is stored at")
	g.Expect(answers[0]).To(ContainSubstring(got.ResourceVersion))
	g.Expect(conditions.GetMessage(&got, kustomizev1.RenderedCondition)).To(Equal("rendered"))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:other"), "another manager's field stays")
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// BoundConditions, for a status written by a patch helper, cuts a long
// condition message the same way and leaves the others as they are.
func TestBoundConditionsCutsLongMessages(t *testing.T) {
	g := NewWithT(t)
	repo := &sourcev1.GitRepository{}
	conditions.MarkFalse(repo, meta.ReadyCondition, meta.FailedReason, "%s", "fetch failed: "+strings.Repeat("e", 40_000))
	conditions.MarkReconciling(repo, meta.ProgressingReason, "retrying")

	reconcile.BoundConditions(repo, nil)

	ready := conditions.Get(repo, meta.ReadyCondition)
	g.Expect(len(ready.Message)).To(BeNumerically("<=", message.MaxBytes))
	g.Expect(ready.Message).To(HavePrefix("fetch failed: eee"))
	g.Expect(ready.Message).To(MatchRegexp(markerRE))
	g.Expect(conditions.GetMessage(repo, meta.ReconcilingCondition)).To(Equal("retrying"))
}

// A failure that repeats with the same long message is no transition:
// conditions.Set sees the whole message differ from the cut one read back
// and stamps a new lastTransitionTime, which BoundConditions takes back. A
// real change keeps the new time.
func TestBoundConditionsKeepsTheTransitionTimeOfAnUnchangedCondition(t *testing.T) {
	long := "fetch failed: " + strings.Repeat("e", 40_000)
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, tt := range []struct {
		name     string
		reason   string
		msg      string
		wantThen bool
	}{
		{"same failure", meta.FailedReason, long, true},
		{"another reason", meta.InvalidSpecReason, long, false},
		{"another message", meta.FailedReason, "fetch failed: " + strings.Repeat("f", 40_000), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// As read back from the API server: set and written before.
			repo := &sourcev1.GitRepository{}
			conditions.MarkFalse(repo, meta.ReadyCondition, meta.FailedReason, "%s", long)
			reconcile.BoundConditions(repo, nil)
			repo.Status.Conditions[0].LastTransitionTime = then
			stored := slices.Clone(repo.Status.Conditions)

			conditions.MarkFalse(repo, meta.ReadyCondition, tt.reason, "%s", tt.msg)
			g.Expect(conditions.Get(repo, meta.ReadyCondition).LastTransitionTime).NotTo(Equal(then), "conditions.Set saw a transition")
			reconcile.BoundConditions(repo, stored)

			ready := conditions.Get(repo, meta.ReadyCondition)
			g.Expect(len(ready.Message)).To(BeNumerically("<=", message.MaxBytes))
			g.Expect(ready.Message == stored[0].Message).To(Equal(tt.msg == long))
			g.Expect(ready.LastTransitionTime.Equal(&then)).To(Equal(tt.wantThen))
		})
	}
}
