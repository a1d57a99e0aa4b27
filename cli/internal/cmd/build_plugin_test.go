package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/renderplugin"
)

// startExamplePlugin builds the example plugin example of
// pkg/renderplugin and starts it with args, as a developer would to try
// a plugin with plumb build; it is stopped when the test ends.
func startExamplePlugin(t *testing.T, example, socketDir, name string, args ...string) {
	t.Helper()
	g := NewWithT(t)
	bin := filepath.Join(t.TempDir(), example)
	out, err := exec.Command("go", "build", "-o", bin, "plumb.dev/pkg/renderplugin/example/"+example).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	g.Eventually(func() error {
		_, err := (&renderplugin.Client{Dir: socketDir}).Info(context.Background(), name)
		return err
	}, "60s", "50ms").Should(Succeed())
}

// TestBuildRendersWithAPlugin: plumb build --plugin-dir renders a
// Kustomization with spec.plugin through the plugin's socket, as
// render-controller does: named, discovered without a name, and failing
// with render-controller's reason when the plugin refuses.
func TestBuildRendersWithAPlugin(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "repo"))
	sockets, err := os.MkdirTemp("", "plumb-cli-plugins-")
	g.Expect(err).NotTo(HaveOccurred())
	defer os.RemoveAll(sockets)
	startExamplePlugin(t, "envsubst", sockets, "envsubst", "--socket", filepath.Join(sockets, "envsubst.sock"))

	named := kustomization(ns, "named", "repo")
	named.Spec.Path = "app"
	named.Spec.Plugin = &kustomizev1.Plugin{Name: "envsubst", Env: []kustomizev1.PluginEnv{{Name: "GREETING", Value: "hello"}}}
	discovered := kustomization(ns, "discovered", "repo")
	discovered.Spec.Path = "app"
	discovered.Spec.Plugin = &kustomizev1.Plugin{Env: []kustomizev1.PluginEnv{{Name: "GREETING", Value: "hi"}}}
	refused := kustomization(ns, "refused", "repo")
	refused.Spec.Path = "app"
	refused.Spec.Plugin = &kustomizev1.Plugin{Name: "envsubst", Parameters: []kustomizev1.PluginParameter{{Name: "colour"}}}
	create(ctx, t, named, discovered, refused)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  text: ${GREETING}\n",
	})

	r := plumb("build", "ks", "named", "-n", ns, "--path", dir, "--plugin-dir", sockets)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(Equal("apiVersion: v1\ndata:\n  text: hello\nkind: ConfigMap\nmetadata:\n  name: greeting\n"))

	r = plumb("build", "ks", "discovered", "-n", ns, "--path", dir, "--plugin-dir", sockets)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("text: hi"))

	r = plumb("build", "ks", "refused", "-n", ns, "--path", dir, "--plugin-dir", sockets)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`the checkout does not render (BuildFailed): plugin "envsubst" takes no parameter "colour"`))

	r = plumb("build", "ks", "named", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("spec.plugin): --plugin-dir names the folder of the plugins' sockets"))
}

// TestBuildBoundsATailstrictRecursion: a Jsonnet recursion in tail
// position with tailstrict keeps go-jsonnet's own stack of frames short
// (its max stack never trips) while the Go stack grows without end, which
// in the plumb process itself would be a fatal stack overflow. plumb build
// evaluates in a render worker, which passes its stack limit and is
// stopped: the build fails with render-controller's LimitExceeded and
// the plumb process carries on.
func TestBuildBoundsATailstrictRecursion(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "repo"))
	ks := kustomization(ns, "deep", "repo")
	ks.Spec.Path = "app"
	create(ctx, t, ks)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"app/main.jsonnet": "local f(n) = f(n + 1) tailstrict;\nf(0)\n"})

	r := plumb("build", "ks", "deep", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring("the checkout does not render (LimitExceeded): "))
	g.Expect(r.errOut).To(ContainSubstring("passed its stack limit of 64 MiB: a template, value or Jsonnet function that recurses without end"))
	g.Expect(r.out).To(BeEmpty())

	// The process that ran the build renders on.
	writeTree(t, dir, map[string]string{"app/main.jsonnet": "local f(n) = if n == 100 then n else f(n + 1) tailstrict;\n{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'deep'}, data: {n: std.toString(f(0))}}\n"})
	r = plumb("build", "ks", "deep", "-n", ns, "--path", dir)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring(`"n": "100"`))
}
