package git

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"plumb.dev/pkg/gitreach"
)

// go-git's transports are process-wide: importing plumb.dev/pkg/gitreach
// installs them, sending each HTTP request through the transport its
// fetch put in the context (reach), so every fetch connects with its own
// address policy, CA bundle and proxy; a request without one fails. No
// ~/.ssh/config is read.

// connection is how one fetch reaches the remote: the context, URL and
// auth to give go-git, and done to call when it is over.
type connection struct {
	ctx  context.Context
	url  string
	auth transport.AuthMethod
	done func()
}

// reach prepares a fetch of rawURL under a.Addresses with
// plumb.dev/pkg/gitreach (its package doc says how each scheme is
// fenced), its errors classified as this package's.
func reach(ctx context.Context, rawURL string, a *Auth) (connection, error) {
	c, err := gitreach.Reach(ctx, rawURL, gitreach.Options{Method: a.Method, CABundle: a.CABundle, Proxy: a.Proxy, Addresses: a.Addresses})
	var ge *gitreach.Error
	if errors.As(err, &ge) {
		kind := InvalidSpec
		if ge.Kind == gitreach.Auth {
			kind = AuthFailed
		}
		return connection{}, &Error{Kind: kind, Err: ge.Err}
	}
	if err != nil {
		return connection{}, err
	}
	return connection{ctx: c.Ctx, url: c.URL, auth: c.Auth, done: c.Done}, nil
}
