package render

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// lockDownChild makes the test binary run TestLockDownProcess's checks in a
// process of their own: LockDownProcess cannot be undone.
const lockDownChild = "PLUMB_RENDER_LOCKDOWN_CHILD"

// After LockDownProcess, plain kustomize (no sandbox) can neither fetch a
// URL nor clone a repository, and a client with NewTransport still works.
func TestLockDownProcess(t *testing.T) {
	if os.Getenv(lockDownChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockDownProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), lockDownChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the locked-down process failed: %v\n%s", err, out)
		}
		return
	}
	g := NewWithT(t)
	srv, hits := leakServer(t)
	LockDownProcess()

	_, err := http.Get(srv.URL)
	g.Expect(errors.Is(err, ErrNetworkRefused)).To(BeTrue(), "%v", err)

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- " + srv.URL + "/leak.yaml\n"})
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = kustypes.DisabledPluginConfig()
	_, err = krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	g.Expect(err).To(MatchError(ContainSubstring(ErrNetworkRefused.Error())))
	g.Expect(hits.Load()).To(BeZero())

	// A clone of a local repository: no network needed, still refused.
	if _, err := exec.LookPath("git"); err == nil {
		repo := filepath.Join(t.TempDir(), "repo")
		g.Expect(exec.Command("git", "init", "-q", repo).Run()).To(Succeed())
		clone := t.TempDir()
		writeTree(t, clone, map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- file://" + repo + "\n"})
		_, err = krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), clone)
		g.Expect(err).To(MatchError(ContainSubstring("not allowed")))
	}

	resp, err := (&http.Client{Transport: NewTransport()}).Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(hits.Load()).To(Equal(int64(1)))
}
