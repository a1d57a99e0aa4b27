package controller

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/renderplugin"
)

// The plugins of these tests are the examples of pkg/renderplugin, built
// from source once and started as processes on sockets in pluginDir, as
// sidecars would be.
var (
	pluginBuild     sync.Once
	pluginBinDir    string
	pluginBuildErr  error
	pluginStartOnce = map[string]*sync.Once{}
	pluginMu        sync.Mutex
	pluginProcs     []*exec.Cmd
)

// startPlugin starts the example plugin example (envsubst or command)
// with args, answering as name, unless it runs already. Its TMPDIR is a
// folder of its own, returned: what the plugin holds of the requests'
// trees is there.
func startPlugin(t *testing.T, example, name string, args ...string) string {
	t.Helper()
	g := NewWithT(t)
	buildPlugins(t)
	tmp := filepath.Join(pluginBinDir, name+"-tmp")
	pluginMu.Lock()
	once := pluginStartOnce[name]
	if once == nil {
		once = &sync.Once{}
		pluginStartOnce[name] = once
	}
	pluginMu.Unlock()
	once.Do(func() {
		g.Expect(os.MkdirAll(tmp, 0o700)).To(Succeed())
		cmd := exec.Command(filepath.Join(pluginBinDir, example), args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		g.Expect(cmd.Start()).To(Succeed())
		pluginMu.Lock()
		pluginProcs = append(pluginProcs, cmd)
		pluginMu.Unlock()
	})
	g.Eventually(func() error {
		_, err := os.Stat(filepath.Join(pluginDir, name+".sock"))
		return err
	}, timeout, poll).Should(Succeed())
	return tmp
}

// buildPlugins builds the example plugins once, into pluginBinDir.
func buildPlugins(t *testing.T) {
	t.Helper()
	pluginBuild.Do(func() {
		pluginBinDir, pluginBuildErr = os.MkdirTemp("", "plumb-plugin-bin-")
		if pluginBuildErr != nil {
			return
		}
		for _, ex := range []string{"envsubst", "command"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(pluginBinDir, ex), "plumb.dev/pkg/renderplugin/example/"+ex).CombinedOutput()
			if err != nil {
				pluginBuildErr = &buildError{string(out)}
				return
			}
		}
	})
	NewWithT(t).Expect(pluginBuildErr).NotTo(HaveOccurred())
}

type buildError struct{ out string }

func (e *buildError) Error() string { return "building the example plugins: " + e.out }

// stopPlugins stops the plugins the tests started and removes their
// binaries; run calls it after the tests.
func stopPlugins() {
	pluginMu.Lock()
	defer pluginMu.Unlock()
	for _, cmd := range pluginProcs {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if pluginBinDir != "" {
		_ = os.RemoveAll(pluginBinDir)
	}
}

func withPlugin(name string, env ...kustomizev1.PluginEnv) func(*kustomizev1.KustomizationSpec) {
	return func(s *kustomizev1.KustomizationSpec) { s.Plugin = &kustomizev1.Plugin{Name: name, Env: env} }
}

// listPlugin answers with a ConfigMap listing every file the plugin holds
// of the requests' trees (its TMPDIR), so a test sees what it was given.
func listPlugin(t *testing.T) {
	startPlugin(t, "command", "list", "--socket-dir", pluginDir, "--name", "list", "--generate",
		`printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: files\ndata:\n'; cd "$TMPDIR" && find . -type f -name '*.txt' | sed 's|.*/||' | sort | sed 's/^\(.*\)$/  \1: seen/'`)
}

func TestAPluginRendersAKustomization(t *testing.T) {
	ns := namespace(t)
	startPlugin(t, "envsubst", "envsubst", "--socket", filepath.Join(pluginDir, "envsubst.sock"))
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "r1", map[string]string{"app/cm.yaml": cm("greeting", "text: ${GREETING}")})
	kustomization(t, ns, "ks", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.Path = "app"
		withPlugin("envsubst", kustomizev1.PluginEnv{Name: "GREETING", Value: "hello"})(s)
	})
	ks := waitRevision(t, ns, "ks", "main@sha1:r1")
	body := download(t, ks.Status.RenderedArtifact)
	g := NewWithT(t)
	g.Expect(body).To(Equal("apiVersion: v1\ndata:\n  text: hello\nkind: ConfigMap\nmetadata:\n  name: greeting\n"))
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring("rendered 1 objects"))
}

func TestAPluginSeesOnlyItsKustomizationsTree(t *testing.T) {
	listPlugin(t)
	nsA, nsB := namespace(t), namespace(t)
	gitRepo(t, nsA, "repo", nil)
	gitRepo(t, nsB, "repo", nil)
	publishTree(t, nsA, "repo", "a1", map[string]string{"tenant-a.txt": "a", "cm.yaml": cm("x", "a: b")})
	publishTree(t, nsB, "repo", "b1", map[string]string{"tenant-b.txt": "b", "cm.yaml": cm("x", "a: c")})
	kustomization(t, nsB, "ks", "repo", withPlugin("list"))
	waitRevision(t, nsB, "ks", "main@sha1:b1")
	kustomization(t, nsA, "ks", "repo", withPlugin("list"))
	ks := waitRevision(t, nsA, "ks", "main@sha1:a1")
	body := download(t, ks.Status.RenderedArtifact)
	g := NewWithT(t)
	g.Expect(body).To(ContainSubstring("tenant-a.txt: seen"))
	g.Expect(body).NotTo(ContainSubstring("tenant-b.txt"))
}

// A plugin that fails, hangs or floods its output fails the render with
// Rendered=False and a message saying why, and the last good render stays
// served.
func TestAPluginsFailuresKeepTheLastGoodRender(t *testing.T) {
	listPlugin(t)
	startPlugin(t, "command", "fail", "--socket-dir", pluginDir, "--name", "fail", "--generate",
		`printf 'working\n\033[31mboom: the template is broken\033[0m\n' >&2; exit 3`)
	startPlugin(t, "command", "hang", "--socket-dir", pluginDir, "--name", "hang", "--generate", `sleep 600`)
	startPlugin(t, "command", "flood", "--socket-dir", pluginDir, "--name", "flood", "--generate", `yes 'a: b' | head -c 1000000`)
	tests := []struct {
		plugin, reason string
		want           []string
	}{
		{"fail", kustomizev1.BuildFailedReason, []string{"the plugin failed: sh: exit status 3: working boom: the template is broken"}},
		{"hang", meta.LimitExceededReason, []string{"time limit"}},
		{"flood", meta.LimitExceededReason, []string{"the plugin's output passes the limit of 65536 bytes", "--max-rendered-size"}},
		{"absent", kustomizev1.BuildFailedReason, []string{`plugin "absent" does not answer`}},
	}
	for _, tc := range tests {
		t.Run(tc.plugin, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			waitIdleWorker(t, reconciler.pool) // the hang's worker was killed at its time limit
			gitRepo(t, ns, "repo", nil)
			publishTree(t, ns, "repo", "r1", map[string]string{"good.txt": "x"})
			kustomization(t, ns, "ks", "repo", withPlugin("list"))
			good := waitRevision(t, ns, "ks", "main@sha1:r1").Status.RenderedArtifact

			ks := getKS(g, ns, "ks")
			ks.Spec.Plugin.Name = tc.plugin
			g.Expect(k8s.Update(context.Background(), ks)).To(Succeed())
			ks = waitRendered(t, ns, "ks", metav1.ConditionFalse, tc.reason)
			msg := renderedCondition(ks).Message
			for _, w := range tc.want {
				g.Expect(msg).To(ContainSubstring(w))
			}
			g.Expect(msg).NotTo(ContainSubstring("\033"))
			g.Expect(ks.Status.RenderedArtifact).To(Equal(good))
			g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("good.txt: seen"))
		})
	}
}

func TestAPluginRenderRefusesWhatKustomizeAloneReads(t *testing.T) {
	listPlugin(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "r1", map[string]string{"good.txt": "x"})
	kustomization(t, ns, "ks", "repo", func(s *kustomizev1.KustomizationSpec) {
		withPlugin("list")(s)
		s.TargetNamespace = "elsewhere"
	})
	ks := waitRendered(t, ns, "ks", metav1.ConditionFalse, kustomizev1.ValidationFailedReason)
	g := NewWithT(t)
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring("cannot take spec.targetNamespace"))
	g.Expect(ks.Status.RenderedArtifact).To(BeNil())
}

// configMapPlugin is the generate command of a plugin that answers with
// one ConfigMap, named name, whose data.answer is answer.
func configMapPlugin(name, answer string) string {
	return `printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ` + name + `\ndata:\n  answer: ` + answer + `\n'`
}

// A Kustomization whose spec.plugin names no plugin is rendered by the one
// plugin whose discover rule matches a file in its path; none, or more
// than one, fails the render naming the plugins.
func TestAPluginIsDiscoveredWhenTheSpecNamesNone(t *testing.T) {
	startPlugin(t, "command", "disc-alpha", "--socket-dir", pluginDir, "--name", "disc-alpha",
		"--discover-file-name", "*.alpha", "--generate", configMapPlugin("from-alpha", "alpha"))
	startPlugin(t, "command", "disc-beta", "--socket-dir", pluginDir, "--name", "disc-beta",
		"--discover-file-name", "*.beta", "--generate", configMapPlugin("from-beta", "beta"))
	discover := func(s *kustomizev1.KustomizationSpec) {
		s.Path = "app"
		s.Plugin = &kustomizev1.Plugin{}
	}

	t.Run("one match renders", func(t *testing.T) {
		ns := namespace(t)
		gitRepo(t, ns, "repo", nil)
		publishTree(t, ns, "repo", "r1", map[string]string{"app/main.beta": "b", "other/main.alpha": "a"})
		kustomization(t, ns, "ks", "repo", discover)
		ks := waitRevision(t, ns, "ks", "main@sha1:r1")
		g := NewWithT(t)
		g.Expect(download(t, ks.Status.RenderedArtifact)).To(Equal("apiVersion: v1\ndata:\n  answer: beta\nkind: ConfigMap\nmetadata:\n  name: from-beta\n"))
	})

	t.Run("none matches", func(t *testing.T) {
		ns := namespace(t)
		gitRepo(t, ns, "repo", nil)
		publishTree(t, ns, "repo", "r1", map[string]string{"app/main.gamma": "c"})
		kustomization(t, ns, "ks", "repo", discover)
		ks := waitRendered(t, ns, "ks", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
		g := NewWithT(t)
		msg := renderedCondition(ks).Message
		g.Expect(msg).To(ContainSubstring(`spec.plugin names no plugin, and none discovers path "app": `))
		g.Expect(msg).To(ContainSubstring("disc-alpha (*.alpha), disc-beta (*.beta)"))
		g.Expect(ks.Status.RenderedArtifact).To(BeNil())
	})

	t.Run("two match", func(t *testing.T) {
		ns := namespace(t)
		gitRepo(t, ns, "repo", nil)
		publishTree(t, ns, "repo", "r1", map[string]string{"app/main.alpha": "a", "app/main.beta": "b"})
		kustomization(t, ns, "ks", "repo", discover)
		ks := waitRendered(t, ns, "ks", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
		g := NewWithT(t)
		g.Expect(renderedCondition(ks).Message).To(ContainSubstring(
			`spec.plugin names no plugin, and 2 plugins discover path "app": disc-alpha (*.alpha), disc-beta (*.beta); name one in spec.plugin.name`))
		g.Expect(ks.Status.RenderedArtifact).To(BeNil())
	})
}

// A plugin's version is part of the render's cache key: the same plugin
// restarted with another version renders the Kustomization again, with
// its new output, at the next reconcile and without a new commit — which
// the cache would otherwise answer with the render it holds.
func TestAPluginUpgradedInPlaceRendersAgain(t *testing.T) {
	buildPlugins(t)
	g := NewWithT(t)
	start := func(version, answer string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(pluginBinDir, "command"), "--socket-dir", pluginDir, "--name", "upgraded",
			"--version", version, "--generate", configMapPlugin("answer", answer))
		g.Expect(cmd.Start()).To(Succeed())
		g.Eventually(func(g Gomega) {
			info, err := (&renderplugin.Client{Dir: pluginDir}).Info(context.Background(), "upgraded")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.Version).To(Equal(version))
		}, timeout, poll).Should(Succeed())
		return cmd
	}
	stop := func(cmd *exec.Cmd) {
		g.Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
		g.Expect(cmd.Wait()).To(Succeed())
	}
	v1 := start("1.0.0", "one")
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "r1", map[string]string{"app/x.txt": "x"})
	kustomization(t, ns, "ks", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.Path = "app"
		s.Plugin = &kustomizev1.Plugin{Name: "upgraded"}
	})
	ks := waitRevision(t, ns, "ks", "main@sha1:r1")
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("answer: one"))
	first := ks.Status.RenderedArtifact.Digest

	stop(v1)
	v2 := start("2.0.0", "two")
	defer stop(v2)
	requestReconcile(t, ns, "ks")
	g.Eventually(func(g Gomega) {
		ks = getKS(g, ns, "ks")
		g.Expect(ks.Status.RenderedArtifact.Digest).NotTo(Equal(first))
	}, timeout, poll).Should(Succeed())
	g.Expect(ks.Status.RenderedArtifact.Revision).To(Equal("main@sha1:r1"), "the same commit")
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("answer: two"))
}
