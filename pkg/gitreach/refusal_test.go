package gitreach

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestRefusalOfTellsTheKindsOfRefusedCredentials(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Refusal
	}{
		{fmt.Errorf("fetch: %w", transport.ErrAuthenticationRequired), CredentialsRefused},
		{fmt.Errorf("push: %w", transport.ErrAuthorizationFailed), CredentialsRefused},
		{fmt.Errorf("dial: %w", &knownhosts.KeyError{}), HostKeyUnknown},
		// go-git's SSH transport flattens its callbacks' errors.
		{errors.New("ssh: handshake failed: knownhosts: key is unknown"), HostKeyUnknown},
		{errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey]"), SSHKeyRefused},
		{transport.ErrRepositoryNotFound, NotRefused},
		{errors.New("dial tcp 127.0.0.1:22: connection refused"), NotRefused},
		{nil, NotRefused},
	} {
		if got := RefusalOf(tc.err); got != tc.want {
			t.Errorf("RefusalOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
