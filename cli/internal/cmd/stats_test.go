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
		{"Bucket", "0", "0", "0", "0", "-"},
		{"ArtifactGenerator", "0", "0", "0", "0", "-"},
		{"Kustomization", "0", "1", "0", "1", "100", "B"},
		{"HelmRelease", "0", "0", "0", "0", "-"},
		{"ObjectSet", "0", "0", "0", "0", "-"},
		{"Receiver", "0", "0", "0", "0", "-"},
		{"Alert", "0", "0", "0", "0", "-"},
		{"Provider", "0", "0", "0", "0", "-"},
		{"ImageRepository", "0", "0", "0", "0", "-"},
		{"ImagePolicy", "0", "0", "0", "0", "-"},
		{"ImageUpdateAutomation", "0", "0", "0", "0", "-"},
	}))

	r = plumb("stats", "-A")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(HaveLen(1 + len(kindsWhere(func(k *kind) bool { return len(k.def.Controllers) > 0 }))))
	g.Expect(plumb("stats", "extra").code).To(Equal(ExitError))
}

// With sharded objects, each kind is counted per shard: the work of each
// shard's controllers, (none) for the main instance's.
func TestStatsPerShard(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	main, sharded := gitRepo(ns, "main"), gitRepo(ns, "sharded")
	sharded.Labels = map[string]string{meta.ShardKeyLabel: "shard1"}
	ks1, ks2 := kustomization(ns, "app1", "sharded"), kustomization(ns, "app2", "sharded")
	ks1.Labels = map[string]string{meta.ShardKeyLabel: "shard1"}
	ks2.Labels = map[string]string{meta.ShardKeyLabel: "shard2"}
	create(ctx, t, main, sharded, ks1, ks2)
	for _, o := range []*sourcev1.GitRepository{main, sharded} {
		setStatus(ctx, t, o, func(o *sourcev1.GitRepository) {
			o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "ok", o.Generation)}
		})
	}
	setStatus(ctx, t, ks1, func(o *kustomizev1.Kustomization) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.HealthCheckFailedReason, "no", o.Generation)}
	})

	r := plumb("stats", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(fields(lines(r.out))).To(Equal([][]string{
		{"RECONCILERS", "SHARD", "READY", "FAILED", "SUSPENDED", "TOTAL", "STORAGE"},
		{"GitRepository", "(none)", "1", "0", "0", "1", "0", "B"},
		{"GitRepository", "shard1", "1", "0", "0", "1", "0", "B"},
		{"HelmRepository", "(none)", "0", "0", "0", "0", "-"},
		{"HelmChart", "(none)", "0", "0", "0", "0", "-"},
		{"OCIRepository", "(none)", "0", "0", "0", "0", "-"},
		{"Bucket", "(none)", "0", "0", "0", "0", "-"},
		{"ArtifactGenerator", "(none)", "0", "0", "0", "0", "-"},
		{"Kustomization", "shard1", "0", "1", "0", "1", "0", "B"},
		{"Kustomization", "shard2", "0", "0", "0", "1", "0", "B"},
		{"HelmRelease", "(none)", "0", "0", "0", "0", "-"},
		{"ObjectSet", "(none)", "0", "0", "0", "0", "-"},
		{"Receiver", "(none)", "0", "0", "0", "0", "-"},
		{"Alert", "(none)", "0", "0", "0", "0", "-"},
		{"Provider", "(none)", "0", "0", "0", "0", "-"},
		{"ImageRepository", "(none)", "0", "0", "0", "0", "-"},
		{"ImagePolicy", "(none)", "0", "0", "0", "0", "-"},
		{"ImageUpdateAutomation", "(none)", "0", "0", "0", "0", "-"},
	}))
}
