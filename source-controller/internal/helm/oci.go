package helm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"helm.sh/helm/v4/pkg/registry"

	"plumb.dev/pkg/netguard"
)

// OCIRef parses an oci:// HelmRepository URL into host/path, checking it
// names a registry host and no tag or digest.
func OCIRef(raw string) (string, error) {
	if !registry.IsOCI(raw) {
		return "", fmt.Errorf("%q is not an oci:// URL", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("invalid OCI repository URL %q: want oci://<host>[/<path>]", raw)
	}
	p := strings.Trim(u.Path, "/")
	if strings.ContainsAny(p, ":@") {
		return "", fmt.Errorf("invalid OCI repository URL %q: it must not hold a tag or digest", raw)
	}
	if p == "" {
		return u.Host, nil
	}
	return u.Host + "/" + p, nil
}

// Registry lists and pulls charts of one OCI registry with the SDK's
// registry client.
type Registry struct {
	client *registry.Client
	// authorizer and plainHTTP list tags with oras directly (see Resolve).
	authorizer *auth.Client
	plainHTTP  bool
	timeout    time.Duration
}

// Bounds of a tag listing: the SDK's Client.Tags follows every Link a
// registry answers with, forever and without a context.
const (
	// MaxTagPages bounds the pages of one tag listing.
	MaxTagPages = 100
	// MaxTags bounds the tags of one listing.
	MaxTags = 10000
	// tagListTimeoutPages: a whole listing may take this many request
	// timeouts.
	tagListTimeoutPages = 5
)

// noCredentialsFile is handed to the registry client, which otherwise
// reads Helm's credentials file of the controller's user: this client is
// given the HelmRepository's credentials or none, nothing ambient.
var noCredentialsFile = filepath.Join(os.TempDir(), "plumb-helm-registry-no-credentials", "config.json")

// NewRegistry returns a client for the registry at host: plain HTTP when
// insecure, every request bounded by timeout, every response by maxBytes,
// connections (the token realm's among them) only where addresses allows.
func NewRegistry(host string, creds Credentials, insecure bool, timeout time.Duration, maxBytes int64, addresses netguard.Policy) (*Registry, error) {
	if (creds.Username == "") != (creds.Password == "") {
		return nil, errors.New("username and password must be given together")
	}
	// Blobs may be redirected to another host (a CDN), but never from
	// https to http; the client certificate goes to the registry only.
	hc := &http.Client{Transport: byHost(host, creds.TLS, false, maxBytes, !insecure, addresses), Timeout: timeout, CheckRedirect: noDowngrade}
	authorizer := auth.Client{Client: hc, Header: http.Header{"User-Agent": {"plumb-source-controller"}}}
	if creds.Username != "" {
		authorizer.Credential = auth.StaticCredential(host, auth.Credential{Username: creds.Username, Password: creds.Password})
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptAuthorizer(authorizer),
		registry.ClientOptCredentialsFile(noCredentialsFile),
	}
	if insecure {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Registry{client: c, authorizer: &authorizer, plainHTTP: insecure, timeout: timeout}, nil
}

// Resolve lists the tags of ref (host/path/chart) and returns the newest
// version matching the semver range version ("" or "*": the newest stable).
// The listing runs under ctx and at most a few request timeouts, follows
// at most MaxTagPages pages and keeps at most MaxTags tags.
func (r *Registry) Resolve(ctx context.Context, ref, version string) (string, error) {
	if version == "*" {
		version = ""
	}
	tags, err := r.tags(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("listing the tags of %s: %w", ref, err)
	}
	if len(tags) == 0 {
		return "", fmt.Errorf("%s has no semver tag", ref)
	}
	tag, err := registry.GetTagMatchingVersionOrConstraint(tags, version)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	return tag, nil
}

// errTooManyTags stops a listing past MaxTags.
var errTooManyTags = fmt.Errorf("more than %d tags", MaxTags)

// tags lists the semver tags of ref, newest first, as the SDK's
// Client.Tags does ("_" read as "+"), within the listing's bounds.
func (r *Registry) tags(ctx context.Context, ref string) ([]string, error) {
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = r.plainHTTP
	repo.Client = r.authorizer
	repo.TagListMaxPages = MaxTagPages
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tagListTimeoutPages*r.timeout)
		defer cancel()
	}
	var versions []*semver.Version
	seen := 0
	err = repo.Tags(ctx, "", func(tags []string) error {
		if seen += len(tags); seen > MaxTags {
			return errTooManyTags
		}
		for _, tag := range tags {
			if v, err := semver.StrictNewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil {
				versions = append(versions, v)
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("not done within %s: %w", tagListTimeoutPages*r.timeout, err)
		}
		return nil, err
	}
	sort.Sort(sort.Reverse(semver.Collection(versions)))
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.String()
	}
	return out, nil
}

// Pull downloads the chart archive of ref at version.
func (r *Registry) Pull(ref, version string) ([]byte, error) {
	// OCI tags cannot hold "+": Helm writes it as "_".
	return r.pull(ref + ":" + strings.ReplaceAll(version, "+", "_"))
}

// PullDigest downloads the chart archive of ref whose manifest is digest
// (sha256:<hex>): the one a signature was checked for, even if its tag
// has moved since. The SDK checks what it reads against the digest.
func (r *Registry) PullDigest(ref, digest string) ([]byte, error) {
	return r.pull(ref + "@" + digest)
}

func (r *Registry) pull(full string) ([]byte, error) {
	res, err := r.client.Pull(full)
	if err != nil {
		if errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), ErrTooLarge.Error()) {
			return nil, fmt.Errorf("pulling %s: %w", full, ErrTooLarge)
		}
		return nil, fmt.Errorf("pulling %s: %w", full, err)
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, fmt.Errorf("%s holds no chart layer", full)
	}
	return res.Chart.Data, nil
}
