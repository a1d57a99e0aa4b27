package cmd

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

func TestExport(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "repo")
	repo.Labels = map[string]string{"team": "a", kustomizev1.NameLabel: "infra", kustomizev1.NamespaceLabel: ns}
	repo.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "2026-01-01T00:00:00Z", "team.example/owner": "ops"}
	repo.Finalizers = []string{"finalizers.plumb.dev"}
	other := gitRepo(ns, "other")
	ks := kustomization(ns, "app", "repo")
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.SlackProvider, Channel: "general", SecretRef: &meta.LocalObjectReference{Name: "slack-url"}},
	}
	create(ctx, t, repo, other, ks, provider)
	setStatus(ctx, t, repo, func(o *sourcev1.GitRepository) {
		o.Status.Artifact = artifact("main@sha1:1")
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "ok", o.Generation)}
	})
	t.Cleanup(func() {
		// Let the namespace go.
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)
		repo.Finalizers = nil
		_ = env.Client.Update(ctx, repo)
	})

	r := plumb("export", "source", "git", "repo", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(Equal(`apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata:
  annotations:
    team.example/owner: ops
  labels:
    team: a
  name: repo
  namespace: `+ns+`
spec:
  interval: 1m0s
  timeout: 1m0s
  url: https://git.example.com/org/repo.git
`), "the API server's default (spec.timeout) is kept: it is what the object is")

	// What is exported applies as it is: it is the object again.
	var back sourcev1.GitRepository
	g.Expect(yaml.UnmarshalStrict([]byte(r.out), &back)).To(Succeed())
	g.Expect(back.Spec.URL).To(Equal(repo.Spec.URL))
	g.Expect(back.Status).To(BeZero())

	r = plumb("export", "source", "git", "--all", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	docs := strings.Split(r.out, "---\n")
	g.Expect(docs).To(HaveLen(2), r.out)
	g.Expect(docs[0]).To(ContainSubstring("name: other\n"))
	g.Expect(docs[1]).To(ContainSubstring("name: repo\n"))

	r = plumb("export", "alert-provider", "slack", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(HavePrefix("apiVersion: notification.plumb.dev/v1\nkind: Provider\n"))
	g.Expect(r.out).To(ContainSubstring("  channel: general\n"))

	r = plumb("export", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	for _, absent := range []string{"status", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"} {
		g.Expect(r.out).NotTo(ContainSubstring(absent+":"), r.out)
	}
	g.Expect(r.out).To(ContainSubstring("  sourceRef:\n    kind: GitRepository\n    name: repo\n"))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "source"}, "want one NAME after the kind (or --all), got 0"},
		// Two words: the second is the NAME, as in reconcile.
		{[]string{"export", "source", "git"}, "GitRepository git not found"},
		{[]string{"export", "source", "git", "repo", "--all"}, "give a NAME or --all, not both"},
		{[]string{"export", "ks", "nothere"}, "Kustomization nothere not found"},
	} {
		r := plumb(append(tc.args, "-n", ns)...)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring(tc.want))
	}
}
