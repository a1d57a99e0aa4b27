package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

func TestStats(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ready, failed, suspended, fresh := gitRepo(ns, "ready"), gitRepo(ns, "failed"), gitRepo(ns, "suspended"), gitRepo(ns, "fresh")
	suspended.Spec.Suspend = true
	ks := kustomization(ns, "app", "ready")
	create(ctx, t, ready, failed, suspended, fresh, ks)
	size := func(n int64) *int64 { return &n }
	setStatus(ctx, t, ready, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact("main@sha1:1")
		o.Status.Artifact.Size = size(2048)
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "ok", o.Generation)}
	})
	setStatus(ctx, t, failed, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", sourcev1.AuthenticationFailedReason, "no", o.Generation)}
	})
	setStatus(ctx, t, suspended, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact("main@sha1:2")
		o.Status.Artifact.Size = size(1024 + 512)
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "ok", o.Generation)}
	})
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.RenderedArtifact = artifact("main@sha1:1")
		o.Status.RenderedArtifact.Size = size(100)
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, "no", o.Generation)}
	})

	r := plumb("stats", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(fields(lines(r.out))).To(Equal([][]string{
		{"RECONCILERS", "READY", "FAILED", "SUSPENDED", "TOTAL", "STORAGE"},
		{"GitRepository", "1", "1", "1", "4", "3.5", "KiB"},
		{"HelmRepository", "0", "0", "0", "0", "-"},
		{"HelmChart", "0", "0", "0", "0", "-"},
		{"OCIRepository", "0", "0", "0", "0", "-"},
		{"Kustomization", "0", "1", "0", "1", "100", "B"},
		{"HelmRelease", "0", "0", "0", "0", "-"},
		{"Receiver", "0", "0", "0", "0", "-"},
		{"Alert", "0", "0", "0", "0", "-"},
		{"Provider", "0", "0", "0", "0", "-"},
	}))

	r = plumb("stats", "-A")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(HaveLen(1 + len(kinds)))
	g.Expect(plumb("stats", "extra").code).To(Equal(ExitError))
}
