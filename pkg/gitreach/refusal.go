package gitreach

import (
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Refusal is why a Git server, or the SSH client's own check of it,
// turned a connection away over credentials: what a user fixes in the
// Secret, not by waiting.
type Refusal int

const (
	// NotRefused: the error is something else.
	NotRefused Refusal = iota
	// HostKeyUnknown: the server's SSH host key is not in known_hosts
	// (an unknown host or a changed key).
	HostKeyUnknown
	// CredentialsRefused: the server asked for credentials or refused
	// the ones given (HTTP 401/403 as go-git reports them).
	CredentialsRefused
	// SSHKeyRefused: the SSH server accepted none of the keys offered.
	SSHKeyRefused
)

// RefusalOf classifies an error of a go-git fetch or push. go-git
// flattens the errors of SSH's callbacks into strings, so the host key
// and the key's refusal are also recognised by their text.
func RefusalOf(err error) Refusal {
	if err == nil {
		return NotRefused
	}
	var keyErr *knownhosts.KeyError
	msg := err.Error()
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return CredentialsRefused
	case errors.As(err, &keyErr), strings.Contains(msg, "knownhosts: key"):
		return HostKeyUnknown
	case strings.Contains(msg, "ssh: unable to authenticate"):
		return SSHKeyRefused
	}
	return NotRefused
}
