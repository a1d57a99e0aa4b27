package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/e2e/localenv"
)

// CI's release of a new image tag reaches the cluster through Git: the
// launcher's "Try:" commands (plumb tag image in the local registry, then
// the registry's push webhook) make the ImageRepository scan at once, the
// ImagePolicy pick the tag, the ImageUpdateAutomation commit it where the
// Deployment's marker says (as its author, signed, pushed with the
// GitRepository's credentials, nothing else changed), and the
// Kustomization apply that commit: the Deployment runs the new tag.
func TestANewImageTagRollsOutThroughAGitCommit(t *testing.T) {
	s := deployDemo(t, localenv.DemoOptions{Namespace: "e2e-image", AppNamespace: "e2e-image-app", Repo: "e2e-image", ImageAutomation: true})
	g, ctx, d := s.g, s.ctx, s.demo
	s.g.Expect(env.WaitDemoReady(ctx, d)).To(Succeed())
	policy := types.NamespacedName{Namespace: d.Namespace, Name: localenv.DemoImageName}
	waitLatestTag(ctx, t, policy, "1.0.0")
	before, err := s.clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	pushersBefore := len(env.Git.Pushers(d.Repo))

	cmds := env.ImageTryCommands(d, plumbCLI, "1.0.1")
	g.Expect(cmds).To(HaveLen(2))
	g.Expect(cmds[0].Command).To(ContainSubstring(" tag image "))
	g.Expect(cmds[1].Command).To(ContainSubstring(d.RegistryWebhookURL))
	for _, c := range cmds {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(cctx, "sh", "-c", c.Command).CombinedOutput()
		cancel()
		t.Logf("$ %s\n%s", c.Command, out)
		g.Expect(err).NotTo(HaveOccurred(), "%s:\n%s", c, out)
	}

	latest := waitLatestTag(ctx, t, policy, "1.0.1")
	g.Expect(latest.Name).To(Equal(d.WebImage))

	// The commit: one, by the automation's author, signed with its key,
	// pushed with the GitRepository's credentials, the tag its only change.
	var after string
	g.Eventually(func(g Gomega) {
		g.Expect(s.clone.Pull(ctx)).To(Succeed())
		after, err = s.clone.Head(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(after).NotTo(Equal(before))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "no commit from the automation")
	repo, err := git.PlainOpen(s.clone.Dir)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.CommitObject(plumbing.NewHash(after))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Author.Name).To(Equal(localenv.DemoBotName))
	g.Expect(commit.Author.Email).To(Equal(localenv.DemoBotEmail))
	g.Expect(commit.ParentHashes).To(Equal([]plumbing.Hash{plumbing.NewHash(before)}))
	g.Expect(commit.Message).To(ContainSubstring("1.0.1"))
	g.Expect(commit.PGPSignature).NotTo(BeEmpty(), "the commit is not signed")
	signer, err := commit.Verify(armoredPublicKey(t, d.SigningKey))
	g.Expect(err).NotTo(HaveOccurred(), "the signature does not verify with the automation's key")
	g.Expect(signer.PrimaryKey.KeyId).To(Equal(d.SigningKey.PrimaryKey.KeyId))
	g.Expect(env.Git.Pushers(d.Repo)[pushersBefore:]).To(Equal([]string{"demo"}), "the push came with the GitRepository's credentials")
	diff, err := exec.CommandContext(ctx, "git", "-C", s.clone.Dir, "diff", "--unified=0", "--no-color", before, after).Output()
	g.Expect(err).NotTo(HaveOccurred())
	var changed []string
	for _, line := range strings.Split(string(diff), "\n") {
		if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++") && !strings.HasPrefix(line, "---") {
			changed = append(changed, line)
		}
	}
	marker := ` # {"$imagepolicy": "` + d.Namespace + `:web"}`
	g.Expect(changed).To(Equal([]string{
		"-          image: " + d.WebImage + ":1.0.0" + marker,
		"+          image: " + d.WebImage + ":1.0.1" + marker,
	}), "the diff:\n%s", diff)
	g.Expect(string(diff)).To(HavePrefix("diff --git a/deployment.yaml b/deployment.yaml\n"))

	// The render and the rollout.
	s.waitApplied(after)
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: d.AppNamespace, Name: "hello"}, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(d.WebImage + ":1.0.1"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// waitLatestTag waits until the ImagePolicy key is Ready with tag as its
// latestRef, and returns that ref.
func waitLatestTag(ctx context.Context, t *testing.T, key types.NamespacedName, tag string) *imagev1.ImageRef {
	t.Helper()
	var ref *imagev1.ImageRef
	NewWithT(t).Eventually(func(g Gomega) {
		p := &imagev1.ImagePolicy{}
		g.Expect(env.Client.Get(ctx, key, p)).To(Succeed())
		g.Expect(p.Status.LatestRef).NotTo(BeNil(), "latestRef; conditions %v", p.Status.Conditions)
		g.Expect(p.Status.LatestRef.Tag).To(Equal(tag), "conditions %v", p.Status.Conditions)
		ref = p.Status.LatestRef
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "ImagePolicy %s did not pick %s", key, tag)
	return ref
}

// armoredPublicKey is key's public half in ASCII armor, as go-git's
// Commit.Verify takes a key ring.
func armoredPublicKey(t *testing.T, key *openpgp.Entity) string {
	t.Helper()
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
