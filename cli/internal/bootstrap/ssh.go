package bootstrap

import (
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"sync"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshHost remembers the key the SSH host showed, as a known_hosts line.
type sshHost struct {
	mu   sync.Mutex
	line []byte
}

func (h *sshHost) known() []byte {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.line
}

// sshAuth is the private key's authentication for an ssh:// URL (user
// from the URL, git by default, as source-controller reads it). The host
// key is checked against KnownHosts when given; otherwise the key the
// host shows is trusted and remembered, as `flux bootstrap git` scans it:
// the first connection decides, and the command prints its fingerprint.
func (a Auth) sshAuth(url string) (*gitssh.PublicKeys, *sshHost, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", url, err)
	}
	user := "git"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	keys, err := gitssh.NewPublicKeys(user, a.PrivateKey, a.Password)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the private key: %w", err)
	}
	host := &sshHost{}
	var check ssh.HostKeyCallback
	if len(a.KnownHosts) > 0 {
		if check, err = knownHostsCallback(a.KnownHosts); err != nil {
			return nil, nil, err
		}
	}
	keys.HostKeyCallback = func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		if check != nil {
			if err := check(hostname, remote, key); err != nil {
				return err
			}
		}
		host.mu.Lock()
		defer host.mu.Unlock()
		host.line = []byte(knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n")
		return nil
	}
	return keys, host, nil
}

// knownHostsCallback checks host keys against known_hosts lines, which
// x/crypto reads from files only.
func knownHostsCallback(lines []byte) (ssh.HostKeyCallback, error) {
	dir, err := os.MkdirTemp("", "plumb-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(file, lines, 0o600); err != nil {
		return nil, err
	}
	cb, err := knownhosts.New(file)
	if err != nil {
		return nil, fmt.Errorf("reading the known hosts: %w", err)
	}
	return cb, nil
}

// Fingerprint is the SHA256 fingerprint of the key of a known_hosts line,
// as ssh-keygen -l prints it, for the command to show what it trusted.
func Fingerprint(line []byte) string {
	_, _, key, _, _, err := ssh.ParseKnownHosts(line)
	if err != nil {
		return ""
	}
	return ssh.FingerprintSHA256(key)
}
