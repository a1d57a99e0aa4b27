package testgit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// VerifySSH runs `git verify-commit` on the commit rev (a hash) with
// gpg.format=ssh and an allowed signers file trusting key for principal
// (an email) in Git's namespace, so a test checks an SSH signature with
// Git itself (which runs ssh-keygen -Y verify) rather than with the code
// that made it. It returns Git's report ("Good "git" signature for ...")
// and an error when Git finds the commit unsigned or badly signed.
func (r *Repo) VerifySSH(rev, principal string, key ssh.PublicKey) (string, error) {
	dir, err := os.MkdirTemp("", "testgit-verify-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	allowed := filepath.Join(dir, "allowed_signers")
	line := principal + ` namespaces="git" ` + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "\n"
	if err := os.WriteFile(allowed, []byte(line), 0o600); err != nil {
		return "", err
	}
	cmd := exec.Command(r.srv.git, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed,
		"verify-commit", "-v", rev)
	cmd.Dir = r.dir
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git verify-commit %s: %w: %s", rev, err, out)
	}
	return string(out), nil
}
