package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// Bounds of the waits. Each step of the story takes about a second; the
// bounds leave room for a loaded 2-core machine.
const (
	timeout = 90 * time.Second
	poll    = 200 * time.Millisecond
)

// story is one test's copy of the sample: its Plumb objects in namespace
// name, its app in name-app, its repository name.git, and a working copy
// cloned with the git binary.
type story struct {
	t     *testing.T
	g     *WithT
	ctx   context.Context
	demo  *localenv.Demo
	clone *localenv.Clone
	key   types.NamespacedName
}

// deploy deploys a copy of the sample for the test and waits until the
// first revision is applied and Ready.
func deploy(t *testing.T, name string) *story {
	t.Helper()
	return deployDemo(t, localenv.DemoOptions{Namespace: name, AppNamespace: name + "-app", Repo: name})
}

// deployDemo deploys a copy of the sample as opts say and waits until the
// first revision is applied and Ready.
func deployDemo(t *testing.T, opts localenv.DemoOptions) *story {
	t.Helper()
	name := opts.Namespace
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	demo, err := env.DeployDemo(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	clone, err := localenv.CloneRepo(ctx, demo.PushURL, filepath.Join(t.TempDir(), name))
	g.Expect(err).NotTo(HaveOccurred())
	s := &story{t: t, g: g, ctx: ctx, demo: demo, clone: clone, key: types.NamespacedName{Namespace: name, Name: "demo"}}
	head, err := clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	s.waitApplied(head)
	return s
}

// revision is the revision string of a commit on main.
func revision(sha string) string { return "main@sha1:" + sha }

// push commits the working copy's changes with the git binary and pushes
// them over HTTP; the Git server then sends the webhook.
func (s *story) push(message string) string {
	s.t.Helper()
	sha, err := s.clone.CommitAndPush(s.ctx, message)
	s.g.Expect(err).NotTo(HaveOccurred())
	return sha
}

// edit rewrites a file of the working copy with old replaced by new.
func (s *story) edit(file, old, new string) {
	s.t.Helper()
	content, err := s.clone.Read(file)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(content).To(ContainSubstring(old))
	s.g.Expect(s.clone.Write(map[string]string{file: strings.Replace(content, old, new, 1)})).To(Succeed())
}

func (s *story) kustomization() *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{}
	s.g.Expect(env.Client.Get(s.ctx, s.key, k)).To(Succeed())
	return k
}

// waitApplied waits until the Kustomization is Ready with the commit sha
// applied at its current generation.
func (s *story) waitApplied(sha string) *kustomizev1.Kustomization {
	s.t.Helper()
	return waitApplied(s.ctx, s.t, s.key, revision(sha))
}

// waitApplied waits until the Kustomization key is Ready with revision
// applied at its current generation, and returns it.
func waitApplied(ctx context.Context, t *testing.T, key types.NamespacedName, revision string) *kustomizev1.Kustomization {
	t.Helper()
	var k *kustomizev1.Kustomization
	NewWithT(t).Eventually(func(g Gomega) {
		k = &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(k.Status.LastAppliedRevision).To(Equal(revision), "lastAppliedRevision; Ready: %s", readyMessage(k))
		g.Expect(conditions.IsReady(k)).To(BeTrue(), "Ready: %s", readyMessage(k))
		g.Expect(k.Status.ObservedGeneration).To(Equal(k.Generation))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Kustomization %s did not apply %s", key, revision)
	return k
}

// waitNotReady waits until the Kustomization is Ready=False at its current
// generation and passes check, and returns it.
func (s *story) waitNotReady(check func(g Gomega, k *kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	s.t.Helper()
	return waitNotReady(s.ctx, s.t, s.key, check)
}

// waitNotReady waits until the Kustomization key is Ready=False at its
// current generation and passes check, and returns it.
func waitNotReady(ctx context.Context, t *testing.T, key types.NamespacedName, check func(g Gomega, k *kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	t.Helper()
	var k *kustomizev1.Kustomization
	NewWithT(t).Eventually(func(g Gomega) {
		k = &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
		ready := readyCondition(k)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), "Ready: %s", readyMessage(k))
		g.Expect(k.Status.ObservedGeneration).To(Equal(k.Generation))
		check(g, k)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Kustomization %s", key)
	t.Logf("%s: Ready=False: %s", key, readyMessage(k))
	return k
}

// waitSourceRevision waits until the GitRepository's artifact is at sha.
func (s *story) waitSourceRevision(sha string) {
	s.t.Helper()
	s.g.Eventually(func(g Gomega) {
		repo := &sourcev1.GitRepository{}
		g.Expect(env.Client.Get(s.ctx, s.key, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
		g.Expect(repo.Status.Artifact.Revision).To(Equal(revision(sha)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// waitRendered waits until render-controller rendered sha.
func (s *story) waitRendered(sha string) {
	s.t.Helper()
	s.g.Eventually(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(s.ctx, s.key, k)).To(Succeed())
		g.Expect(k.Status.RenderedArtifact).NotTo(BeNil())
		g.Expect(k.Status.RenderedArtifact.Revision).To(Equal(revision(sha)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// waitDeploymentAvailable waits until the app's Deployment has all its
// replicas available (kube-controller-manager and the pod simulator at work).
func (s *story) waitDeploymentAvailable() {
	s.t.Helper()
	s.g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello"}, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// waitSlack waits for a Slack message about this story's Kustomization
// with the given reason whose text or fields contain every one of want.
func (s *story) waitSlack(reason string, want ...string) localenv.SlackMessage {
	s.t.Helper()
	return s.waitSlackFrom("kustomization/"+s.key.Namespace+"/"+s.key.Name, reason, want...)
}

// waitSlackFrom waits for a Slack message from author (kind/namespace/name,
// the kind in lower case) with the given reason whose text or fields
// contain every one of want.
func (s *story) waitSlackFrom(author, reason string, want ...string) localenv.SlackMessage {
	s.t.Helper()
	var found localenv.SlackMessage
	s.g.Eventually(func() bool {
		msgs, _ := env.Slack.Messages()
		for _, m := range msgs {
			for _, a := range m.Attachments {
				if a.AuthorName != author || a.Title != reason {
					continue
				}
				if containsAll(m.Raw, want) {
					found = m
					return true
				}
			}
		}
		return false
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), func() string {
		msgs, _ := env.Slack.Messages()
		var got []string
		for _, m := range msgs {
			if strings.Contains(m.Raw, s.key.Namespace) {
				got = append(got, m.String())
			}
		}
		return fmt.Sprintf("no Slack message %s for %s containing %q; got:\n%s", reason, author, want, strings.Join(got, "\n"))
	})
	return found
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func readyMessage(k *kustomizev1.Kustomization) string {
	c := conditions.Get(k, meta.ReadyCondition)
	if c == nil {
		return "no Ready condition"
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}

func inventoryIDs(inv *kustomizev1.Inventory) []string {
	var out []string
	if inv == nil {
		return out
	}
	for _, e := range inv.Entries {
		out = append(out, e.Kind+"/"+e.Namespace+"/"+e.Name)
	}
	return out
}

func readyCondition(k *kustomizev1.Kustomization) *metav1.Condition {
	return conditions.Get(k, meta.ReadyCondition)
}

// inventoryObject returns an empty object of the entry's kind and name, to
// Get.
func inventoryObject(e kustomizev1.InventoryEntry) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind})
	obj.SetNamespace(e.Namespace)
	obj.SetName(e.Name)
	return obj
}

// inPreSyncWithHook waits until the story's Kustomization syncs the
// commit sha and is in its PreSync phase, with the hook Job hook created
// and running for runSeconds (localenv.RunSecondsAnnotation), and returns
// that Job (in the sample's app namespace): a story that breaks
// something mid-sync does it then.
func (s *story) inPreSyncWithHook(sha, hook, runSeconds string) *batchv1.Job {
	job := &batchv1.Job{}
	jobKey := types.NamespacedName{Namespace: s.demo.AppNamespace, Name: hook}
	s.g.Eventually(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(s.ctx, s.key, k)).To(Succeed())
		g.Expect(k.Status.Sync).NotTo(BeNil())
		g.Expect(k.Status.Sync.Revision).To(Equal(revision(sha)))
		g.Expect(k.Status.Sync.Phase).To(Equal(kustomizev1.PhasePreSync))
		g.Expect(env.Client.Get(s.ctx, jobKey, job)).To(Succeed())
		g.Expect(job.Spec.Template.Annotations).To(HaveKeyWithValue(localenv.RunSecondsAnnotation, runSeconds))
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return job
}
