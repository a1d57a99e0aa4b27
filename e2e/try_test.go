package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/e2e/localenv"
)

// Every command of the launcher's "Try:" list, taken from the function
// that prints it, succeeds as printed: plumb get, tree, diff and events
// (with the local NATS URL), those of the Helm sample, a clone, a push that
// is applied, and a foreign edit that is reverted.
func TestTheTryCommandsWork(t *testing.T) {
	s := deployDemo(t, localenv.DemoOptions{Namespace: "e2e-try", AppNamespace: "e2e-try-app", Repo: "e2e-try", Helm: true})
	// The Helm sample too, as `make run` waits for it.
	s.g.Expect(env.WaitDemoReady(s.ctx, s.demo)).To(Succeed())
	cmds := env.TryCommands(s.demo, plumbCLI, filepath.Join(t.TempDir(), "demo"))
	s.g.Expect(cmds).NotTo(BeEmpty())
	var names []string
	for _, c := range cmds {
		names = append(names, strings.Fields(c.Command)[0])
	}
	s.g.Expect(strings.Join(names, " ")).To(ContainSubstring(plumbCLI), "the plumb commands are listed")
	for _, c := range cmds {
		if strings.HasPrefix(c.Command, "kubectl ") {
			if _, err := exec.LookPath("kubectl"); err != nil {
				t.Logf("no kubectl on PATH: not running %s", c.Command)
				continue
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", c.Command)
		cmd.Dir = t.TempDir()
		// The identity a user's git config would give the commit.
		cmd.Env = append(os.Environ(),
			"GIT_AUTHOR_NAME=Plumb e2e", "GIT_AUTHOR_EMAIL=e2e@plumb.dev",
			"GIT_COMMITTER_NAME=Plumb e2e", "GIT_COMMITTER_EMAIL=e2e@plumb.dev")
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("$ %s\n%s", c.Command, out)
		s.g.Expect(err).NotTo(HaveOccurred(), "%s:\n%s", c, out)
		if strings.Contains(c.Command, " events ") {
			s.g.Expect(string(out)).To(ContainSubstring("demo"), "plumb events printed the sample's events")
		}
		if strings.Contains(c.Command, " get helmreleases ") {
			s.g.Expect(string(out)).To(MatchRegexp(`(?m)^e2e-try\s+hello\s+True\s+1\.0\.0`), "plumb get helmreleases shows the Helm sample released")
		}
	}
	// The Alert of the sample hears the HelmRelease too.
	msg := s.waitSlackFrom("helmrelease/"+s.demo.Namespace+"/hello", helmv2.InstallSucceededReason, "hello@1.0.0")
	t.Logf("alert: %s", msg)
	// The push is applied, and the foreign edit reverted to it.
	s.g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "Hello again"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
