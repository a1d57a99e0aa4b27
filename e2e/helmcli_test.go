package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// helmCLI runs the helm CLI of hack/tools (bin/helm) against the env's
// API server in namespace, with folders of its own (no cache, config or
// repositories of the machine's user), fails the test when it fails, and
// returns its output.
func helmCLI(ctx context.Context, t *testing.T, namespace string, args ...string) string {
	t.Helper()
	g := NewWithT(t)
	helm, err := filepath.Abs("../bin/helm")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, helm, append(args, "-n", namespace, "--kubeconfig", env.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("$ helm %v -n %s\n%s", args, namespace, out)
	g.Expect(err).NotTo(HaveOccurred())
	return string(out)
}
