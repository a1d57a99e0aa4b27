package testgit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// NewKey returns a fresh ed25519 key: the private key in OpenSSH PEM form
// (what a Secret's identity holds) and its signer.
func NewKey() ([]byte, ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "plumb test")
	if err != nil {
		return nil, nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(block), signer, nil
}

// SSHOptions configure the SSH server.
type SSHOptions struct {
	// HostKey is the server's host key; nil generates one.
	HostKey ssh.Signer
	// AuthorizedKeys are the client keys let in; none lets every key in.
	AuthorizedKeys []ssh.PublicKey
}

type sshServer struct {
	ln      net.Listener
	config  *ssh.ServerConfig
	hostKey ssh.PublicKey
	wg      sync.WaitGroup
}

// StartSSH starts an SSH server on 127.0.0.1 and a random port that serves
// git-upload-pack for the repositories, and git-receive-pack with
// Options.Push. It returns the known_hosts line
// that trusts its host key.
func (s *Server) StartSSH(opts SSHOptions) (string, error) {
	if s.ssh != nil {
		return "", errors.New("the SSH server is already running")
	}
	if opts.HostKey == nil {
		_, signer, err := NewKey()
		if err != nil {
			return "", err
		}
		opts.HostKey = signer
	}
	authorized := opts.AuthorizedKeys
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if len(authorized) == 0 {
				return nil, nil
			}
			for _, k := range authorized {
				if bytes.Equal(k.Marshal(), key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("key not authorized")
		},
	}
	cfg.AddHostKey(opts.HostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &sshServer{ln: ln, config: cfg, hostKey: opts.HostKey.PublicKey()}
	s.ssh = srv
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			srv.wg.Add(1)
			go func() {
				defer srv.wg.Done()
				s.serveSSH(conn)
			}()
		}
	}()
	return s.KnownHosts(), nil
}

// SSHAddress returns the SSH server's host:port.
func (s *Server) SSHAddress() string { return s.ssh.addr() }

// KnownHosts returns a known_hosts line for the SSH server's host key.
func (s *Server) KnownHosts() string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.ssh.addr())}, s.ssh.hostKey) + "\n"
}

func (s *sshServer) addr() string { return s.ln.Addr().String() }

func (s *sshServer) close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) serveSSH(nc net.Conn) {
	defer nc.Close()
	conn, chans, reqs, err := ssh.NewServerConn(nc, s.ssh.config)
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nch.Accept()
		if err != nil {
			continue
		}
		go s.serveSession(ch, chReqs)
	}
}

func (s *Server) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			// env (GIT_PROTOCOL), pty and shell are refused.
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		service, name, ok := parseService(payload.Command)
		if !ok || !repoName.MatchString(name) || (service == "receive-pack" && !s.opts.Push) {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		if service == "receive-pack" {
			s.count(s.pushes, name)
		} else {
			s.count(s.fetches, name)
		}
		cmd := exec.Command(s.git, service, s.repoDir(name))
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.root}
		cmd.Stdin = ch
		cmd.Stdout = ch
		cmd.Stderr = ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = uint32(ee.ExitCode())
			} else {
				fmt.Fprintf(ch.Stderr(), "testgit: %v\n", err)
			}
		}
		_ = ch.CloseWrite()
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], status)
		_, _ = ch.SendRequest("exit-status", false, b[:])
		return
	}
}

// parseService reads "git-upload-pack '/name.git'" (or "git upload-pack
// name.git", and the same of receive-pack) and returns the service and
// the repository name.
func parseService(cmd string) (service, name string, ok bool) {
	for _, svc := range []string{"upload-pack", "receive-pack"} {
		for _, prefix := range []string{"git-" + svc + " ", "git " + svc + " "} {
			if rest, found := strings.CutPrefix(cmd, prefix); found {
				rest = strings.Trim(strings.TrimSpace(rest), `'"`)
				rest = strings.TrimPrefix(rest, "/")
				rest = strings.TrimSuffix(rest, "/")
				return svc, strings.TrimSuffix(rest, ".git"), true
			}
		}
	}
	return "", "", false
}
