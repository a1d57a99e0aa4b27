package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"plumb.dev/pkg/netguard"
)

// Kind says what went wrong, for the reason and the retry policy.
type Kind int

// Kinds of Error.
const (
	// Other: a network or registry failure, retried.
	Other Kind = iota
	// AuthFailed: the Secret is missing or unusable, or the registry
	// refused the credentials.
	AuthFailed
	// InvalidSpec: the image name or the connection settings cannot work.
	InvalidSpec
	// TooManyTags: more tags, or pages of them, than the limits allow.
	TooManyTags
	// TooLarge: an answer over Limits.MaxPageBytes.
	TooLarge
	// NotFound: no such repository or tag.
	NotFound
)

// Error is a failure with its Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err: the one of an *Error in its chain,
// AuthFailed for a registry's 401 or 403, NotFound for a 404, else Other.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return AuthFailed
		case http.StatusNotFound:
			return NotFound
		}
	}
	return Other
}

func errorf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Limits bound one scan.
type Limits struct {
	// MaxTags is the most tags a repository may list (before the
	// exclusion list); a longer list fails the scan (TooManyTags).
	MaxTags int
	// MaxPages is the most pages of the tag list read.
	MaxPages int
	// MaxPageBytes bounds the body of every successful answer: a page of
	// tags, a token, a manifest's HEAD.
	MaxPageBytes int64
}

// Defaults of Limits (image-controller's flags): 10,000 tags hold every
// release and CI build of a busy repository for years, and a page of
// them at 128 bytes a tag is 1.3 MB; 4 MiB leaves room for a registry
// that pads. The page size asked for is pageSize, so that a registry
// that honours it needs MaxTags/pageSize pages.
const (
	DefaultMaxTags      = 10_000
	DefaultMaxPages     = 100
	DefaultMaxPageBytes = 4 << 20
	pageSize            = 1000
)

func (l Limits) withDefaults() Limits {
	if l.MaxTags <= 0 {
		l.MaxTags = DefaultMaxTags
	}
	if l.MaxPages <= 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxPageBytes <= 0 {
		l.MaxPageBytes = DefaultMaxPageBytes
	}
	return l
}

// Options say how a Client reaches the registry.
type Options struct {
	// Insecure allows plain HTTP (spec.insecure).
	Insecure bool
	// DockerConfig is a Secret's .dockerconfigjson, whose entry for the
	// registry's host gives the credentials; nil for anonymous access.
	DockerConfig []byte
	// TLS is spec.certSecretRef's CA and client certificate; nil is Go's.
	TLS *tls.Config
	// Addresses is where a connection may go (--allowed-private-networks).
	Addresses netguard.Policy
	// Limits bound what is read; zero fields are the defaults.
	Limits Limits
}

// ParseImage parses an ImageRepository's spec.image: a repository name
// without tag or digest.
func ParseImage(image string, insecure bool) (name.Repository, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(image, append(opts, name.StrictValidation)...)
	if err != nil {
		return name.Repository{}, errorf(InvalidSpec, "spec.image %q is not an image repository (no tag or digest): %v", image, err)
	}
	return repo, nil
}

// Client reaches one repository.
type Client struct {
	repo   name.Repository
	opts   []remote.Option
	limits Limits
}

// NewClient returns a client of image (spec.image) with the credentials of
// o for its registry's host, connecting only where o.Addresses allows.
func NewClient(image string, o Options) (*Client, error) {
	repo, err := ParseImage(image, o.Insecure)
	if err != nil {
		return nil, err
	}
	auth := authn.Anonymous
	if o.DockerConfig != nil {
		if auth, err = authFor(o.DockerConfig, repo.RegistryStr()); err != nil {
			return nil, err
		}
	}
	limits := o.Limits.withDefaults()
	rt := newTransport(o.Addresses, o.TLS, limits.MaxPageBytes, o.DockerConfig != nil && !o.Insecure)
	return &Client{
		repo:   repo,
		opts:   []remote.Option{remote.WithAuth(auth), remote.WithTransport(rt), remote.WithPageSize(pageSize)},
		limits: limits,
	}, nil
}

// Repository is the repository the client reaches.
func (c *Client) Repository() name.Repository { return c.repo }

// Tags lists the repository's tags a page at a time, and stops as soon as
// there are more than Limits.MaxTags or more than Limits.MaxPages pages:
// a registry that lists tags without end is not read to its end.
func (c *Client) Tags(ctx context.Context) ([]string, error) {
	puller, err := remote.NewPuller(append(c.opts, remote.WithContext(ctx))...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, c.repo)
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", c.repo, err)
	}
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == c.limits.MaxPages {
			return nil, errorf(TooManyTags, "%s lists its tags in more than %d pages, more than image-controller reads (--max-tag-pages)", c.repo, c.limits.MaxPages)
		}
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", c.repo, err)
		}
		if tags = append(tags, page.Tags...); len(tags) > c.limits.MaxTags {
			return nil, errorf(TooManyTags, "%s has more than %d tags, more than image-controller scans (--max-tags)", c.repo, c.limits.MaxTags)
		}
	}
	return tags, nil
}

// Digest returns the manifest digest of tag (a HEAD request).
func (c *Client) Digest(ctx context.Context, tag string) (string, error) {
	d, err := remote.Head(c.repo.Tag(tag), append(c.opts, remote.WithContext(ctx))...)
	if err != nil {
		if KindOf(err) == NotFound {
			return "", errorf(NotFound, "tag %q not found in %s", tag, c.repo)
		}
		return "", fmt.Errorf("reading the digest of %s:%s: %w", c.repo, tag, err)
	}
	return d.Digest.String(), nil
}
