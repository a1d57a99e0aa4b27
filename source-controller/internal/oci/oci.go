package oci

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"plumb.dev/pkg/netguard"
	"plumb.dev/source-controller/internal/egress"
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
	// InvalidSpec: the URL, semver range or filter cannot be used.
	InvalidSpec
	// NotFound: no such tag or digest, no tag in the range, no layer of
	// the media type.
	NotFound
	// TooLarge: the layer is over the size limit, or the repository has
	// too many tags for a semver range.
	TooLarge
	// NoLayer: the manifest has no layer (of the selected media type).
	NoLayer
	// Unverified: with spec.verify, the manifest carries no signature by
	// a trusted key over its digest.
	Unverified
)

// Error is a failure of Resolve or Pull with its Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err: the one of an *Error in its chain,
// AuthFailed for a registry's 401 or 403, NotFound for a 404, Other else.
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

// DefaultTag is pulled when the reference names nothing.
const DefaultTag = "latest"

// MaxTags bounds the tags a semver range is resolved against, and
// MaxTagPages the pages of the registry's tag list read to find them.
const (
	MaxTags     = 10_000
	MaxTagPages = 100
)

// Ref is what to pull, Flux's OCIRepository spec.ref.
type Ref struct {
	Digest, SemVer, SemverFilter, Tag string
}

// Client reaches one repository.
type Client struct {
	ctx  context.Context
	repo name.Repository
	opts []remote.Option
	// auth is for VerifyNotation's client (oras-go's), and plainHTTP
	// whether it may use plain HTTP: with spec.insecure, or without
	// credentials where go-containerregistry would (httpsOnly).
	auth      authn.Authenticator
	plainHTTP bool
	// transport is every request's, VerifyNotation's too: connections
	// only where the address policy allows, error answers as excerpts
	// (source-controller/internal/egress).
	transport http.RoundTripper
	addresses netguard.Policy
}

// Options say how a Client reaches the registry.
type Options struct {
	// Insecure allows plain HTTP (spec.insecure).
	Insecure bool
	// DockerConfig is a Secret's .dockerconfigjson, whose entry for the
	// registry's host gives the credentials; nil for anonymous access.
	DockerConfig []byte
	// Auth, when set, are the credentials instead of DockerConfig's (a
	// HelmRepository's username and password).
	Auth authn.Authenticator
	// TLS is the HTTPS client configuration (spec.certSecretRef's CA and
	// client certificate); nil is Go's.
	TLS *tls.Config
	// Proxy is the proxy every request goes through
	// (spec.proxySecretRef); nil is the environment's.
	Proxy *url.URL
	// Addresses is where a connection may go: the registry, where it
	// redirects blobs to, the token realm, or the proxy.
	Addresses netguard.Policy
}

// NewClient parses url (oci://host[:port]/path, no tag or digest) and
// returns a client with the credentials of o for the repository's host,
// that connects only where o.Addresses allows: the registry, where it
// redirects blobs to, and the token realm of its authentication
// challenge (or, with o.Proxy, the proxy, which connects onwards).
func NewClient(ctx context.Context, rawURL string, o Options) (*Client, error) {
	s, ok := strings.CutPrefix(rawURL, "oci://")
	if !ok {
		return nil, errorf(InvalidSpec, "url %q does not start with oci://", rawURL)
	}
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	repo, err := name.NewRepository(s, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return nil, errorf(InvalidSpec, "url %q is not an OCI repository (a tag or digest belongs in spec.ref): %v", rawURL, err)
	}
	auth := o.Auth
	switch {
	case auth != nil:
	case o.DockerConfig != nil:
		if auth, err = authFor(o.DockerConfig, repo.RegistryStr()); err != nil {
			return nil, err
		}
	default:
		auth = authn.Anonymous
	}
	credentials := o.Auth != nil || o.DockerConfig != nil
	t := egress.Transport(o.Addresses)
	if o.TLS != nil {
		t.TLSClientConfig = o.TLS.Clone()
	}
	if o.Proxy != nil {
		t.Proxy = http.ProxyURL(o.Proxy)
	}
	var transport http.RoundTripper = egress.Excerpts(t)
	if credentials && !o.Insecure {
		transport = httpsOnly{transport}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(boundedManifests{transport})}
	// oras-go (VerifyNotation) does not probe for HTTPS as
	// go-containerregistry does: plain HTTP only where nothing asks for
	// TLS (credentials, a CA or client certificate).
	plainHTTP := o.Insecure || (!credentials && o.TLS == nil && repo.Registry.Scheme() == "http")
	return &Client{ctx: ctx, repo: repo, opts: opts, auth: auth, plainHTTP: plainHTTP, transport: transport, addresses: o.Addresses}, nil
}

// httpsOnly refuses plain HTTP requests. go-containerregistry falls back
// to HTTP for loopback, RFC 1918 and *.local registries on its own; with
// credentials from a Secret that fallback would send them unencrypted, so
// it takes spec.insecure, the user's say-so, as for any other host.
type httpsOnly struct{ next http.RoundTripper }

func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, errorf(InvalidSpec, "%s answers only over plain HTTP: the Secret's credentials are sent over HTTPS only, unless spec.insecure is true", req.URL.Host)
	}
	return t.next.RoundTrip(req)
}

// MaxManifestBytes bounds every manifest read from a registry (the
// artifact's, an index, a signature's): the OCI distribution spec asks
// registries to accept manifests of at least 4 MiB, and go-containerregistry's
// own bound is far larger.
const MaxManifestBytes = 4 << 20

// boundedManifests cuts the answer to a manifest request at
// MaxManifestBytes, so that a registry whose HEAD announced a small
// manifest cannot then send a large one: the read fails instead.
type boundedManifests struct{ next http.RoundTripper }

func (t boundedManifests) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !asksForManifest(req) {
		return resp, err
	}
	if resp.ContentLength > MaxManifestBytes {
		resp.Body.Close()
		return nil, errorf(TooLarge, "the manifest at %s is %d bytes, more than the limit of %d", req.URL.Path, resp.ContentLength, MaxManifestBytes)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxManifestBytes, path: req.URL.Path}
	return resp, nil
}

// asksForManifest reports a manifest request, or a request a registry
// redirected a manifest request to (its path then names anything).
func asksForManifest(req *http.Request) bool {
	for r := req; r != nil; {
		if strings.Contains(r.URL.Path, "/manifests/") {
			return true
		}
		if r.Response == nil {
			return false
		}
		r = r.Response.Request
	}
	return false
}

// limitedBody fails a read past its bound (an io.LimitReader would end
// the manifest quietly, as if it were shorter).
type limitedBody struct {
	io.ReadCloser
	left int64
	path string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, errorf(TooLarge, "the manifest at %s is more than the limit of %d bytes", b.path, MaxManifestBytes)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// dockerConfig is the part of a .dockerconfigjson read here.
type dockerConfig struct {
	Auths map[string]struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	} `json:"auths"`
}

// authFor returns the credentials of host in a .dockerconfigjson, or
// anonymous access when it has no entry for host. Entries may be written
// as a bare host or as a URL (https://host/v1/), as docker login writes
// them.
func authFor(b []byte, host string) (authn.Authenticator, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, errorf(AuthFailed, "the .dockerconfigjson of spec.secretRef is not valid JSON: %v", err)
	}
	for key, e := range cfg.Auths {
		if registryHost(key) != host {
			continue
		}
		user, pass := e.Username, e.Password
		if e.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, errorf(AuthFailed, "the auth of %s in spec.secretRef is not base64", key)
			}
			var ok bool
			if user, pass, ok = strings.Cut(string(dec), ":"); !ok {
				return nil, errorf(AuthFailed, "the auth of %s in spec.secretRef is not <user>:<password>", key)
			}
		}
		return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), nil
	}
	return authn.Anonymous, nil
}

func registryHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	if host == "docker.io" || host == "index.docker.io" {
		return name.DefaultRegistry
	}
	return host
}

// Resolve returns the manifest digest ref names and the revision of it:
// "<tag>@sha256:<hex>" for a tag or semver range, "sha256:<hex>" for a
// digest.
func (c *Client) Resolve(ref Ref) (v1.Hash, string, error) {
	switch {
	case ref.Digest != "":
		h, err := v1.NewHash(ref.Digest)
		if err != nil {
			return v1.Hash{}, "", errorf(InvalidSpec, "spec.ref.digest: %v", err)
		}
		return h, h.String(), nil
	case ref.SemVer != "":
		tag, err := c.highest(ref.SemVer, ref.SemverFilter)
		if err != nil {
			return v1.Hash{}, "", err
		}
		return c.tagDigest(tag)
	case ref.Tag != "":
		return c.tagDigest(ref.Tag)
	}
	return c.tagDigest(DefaultTag)
}

func (c *Client) tagDigest(tag string) (v1.Hash, string, error) {
	d, err := remote.Head(c.repo.Tag(tag), c.opts...)
	if err != nil {
		if KindOf(err) == NotFound {
			return v1.Hash{}, "", errorf(NotFound, "tag %q not found in %s", tag, c.repo)
		}
		return v1.Hash{}, "", fmt.Errorf("resolving tag %q of %s: %w", tag, c.repo, err)
	}
	return d.Digest, tag + "@" + d.Digest.String(), nil
}

// highest returns the tag with the highest version in the range, among
// the tags matching filter (a regular expression, "" for all) that are
// semantic versions.
func (c *Client) highest(rng, filter string) (string, error) {
	constraint, err := semver.NewConstraint(rng)
	if err != nil {
		return "", errorf(InvalidSpec, "spec.ref.semver %q: %v", rng, err)
	}
	var re *regexp.Regexp
	if filter != "" {
		if re, err = regexp.Compile(filter); err != nil {
			return "", errorf(InvalidSpec, "spec.ref.semverFilter %q: %v", filter, err)
		}
	}
	tags, err := c.tags()
	if err != nil {
		return "", err
	}
	type candidate struct {
		tag string
		v   *semver.Version
	}
	var in []candidate
	for _, t := range tags {
		if re != nil && !re.MatchString(t) {
			continue
		}
		v, err := semver.NewVersion(t)
		if err != nil || !constraint.Check(v) {
			continue
		}
		in = append(in, candidate{t, v})
	}
	if len(in) == 0 {
		return "", errorf(NotFound, "no tag of %s matches the semver range %q", c.repo, rng)
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].v.GreaterThan(in[j].v) })
	return in[0].tag, nil
}

// tags lists the repository's tags a page at a time and stops as soon as
// there are more than MaxTags, or more than MaxTagPages pages: a registry
// that lists tags without end (or one tag per page) is not read to its
// end before being refused.
func (c *Client) tags() ([]string, error) {
	puller, err := remote.NewPuller(c.opts...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(c.ctx, c.repo)
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", c.repo, err)
	}
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == MaxTagPages {
			return nil, errorf(TooLarge, "%s lists its tags in more than %d pages, more than a semver range is resolved against", c.repo, MaxTagPages)
		}
		page, err := lister.Next(c.ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", c.repo, err)
		}
		if tags = append(tags, page.Tags...); len(tags) > MaxTags {
			return nil, errorf(TooLarge, "%s has more than the %d tags a semver range is resolved against", c.repo, MaxTags)
		}
	}
	return tags, nil
}

// Layer is the layer Pull selected.
type Layer struct {
	Digest    v1.Hash
	MediaType string
	Size      int64
	// Annotations are the manifest's org.opencontainers.image.*
	// annotations, bounded (MaxAnnotations, MaxAnnotationSize): they go
	// into the object's status.
	Annotations map[string]string
}

// Pull downloads the layer of the manifest digest that mediaType selects
// (the first layer when ""), at most maxSize bytes, to the file dest.
func (c *Client) Pull(digest v1.Hash, mediaType string, maxSize int64, dest string) (*Layer, error) {
	img, err := remote.Image(c.repo.Digest(digest.String()), c.opts...)
	if err != nil {
		return nil, fmt.Errorf("pulling the manifest %s of %s: %w", digest, c.repo, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest %s of %s: %w", digest, c.repo, err)
	}
	var desc *v1.Descriptor
	for i := range m.Layers {
		if mediaType == "" || string(m.Layers[i].MediaType) == mediaType {
			desc = &m.Layers[i]
			break
		}
	}
	if desc == nil {
		if mediaType == "" {
			return nil, errorf(NoLayer, "the artifact %s of %s has no layer", digest, c.repo)
		}
		return nil, errorf(NoLayer, "the artifact %s of %s has no layer of media type %q", digest, c.repo, mediaType)
	}
	if desc.Size > maxSize {
		return nil, errorf(TooLarge, "the layer %s is %d bytes, more than the limit of %d", desc.Digest, desc.Size, maxSize)
	}
	l, err := img.LayerByDigest(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("pulling the layer %s: %w", desc.Digest, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("pulling the layer %s: %w", desc.Digest, err)
	}
	defer rc.Close()
	f, err := os.Create(dest)
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, io.LimitReader(rc, maxSize+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pulling the layer %s: %w", desc.Digest, err)
	}
	if n > maxSize {
		return nil, errorf(TooLarge, "the layer %s is more than the limit of %d bytes", desc.Digest, maxSize)
	}
	return &Layer{Digest: desc.Digest, MediaType: string(desc.MediaType), Size: n, Annotations: boundedAnnotations(m.Annotations)}, nil
}

// Bounds of Layer.Annotations.
const (
	MaxAnnotations    = 16
	MaxAnnotationSize = 1024
)

// annotationPrefix is the OCI image spec's namespace of annotations,
// where `flux push artifact` writes source and revision.
const annotationPrefix = "org.opencontainers.image."

// firstAnnotations are kept before any other: what `flux push artifact`
// and `plumb push artifact` write.
var firstAnnotations = []string{"source", "revision", "created", "version"}

func boundedAnnotations(in map[string]string) map[string]string {
	usable := func(k string) bool {
		v, ok := in[k]
		return ok && strings.HasPrefix(k, annotationPrefix) && len(k) <= MaxAnnotationSize && len(v) <= MaxAnnotationSize
	}
	var keys []string
	first := map[string]bool{}
	for _, k := range firstAnnotations {
		k = annotationPrefix + k
		first[k] = true
		if usable(k) {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range in {
		if !first[k] && usable(k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	if len(keys) > MaxAnnotations {
		keys = keys[:MaxAnnotations]
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = in[k]
	}
	return out
}
