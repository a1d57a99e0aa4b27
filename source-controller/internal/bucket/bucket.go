package bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
	"golang.org/x/sync/errgroup"

	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/netguard"
	"plumb.dev/source-controller/internal/egress"
)

// Kind says what a failed fetch means for its retry and reason.
type Kind int

// Kinds of Error.
const (
	// Other: the server is unreachable or answered an error; retrying may
	// help.
	Other Kind = iota
	// AuthFailed: the server refused the credentials (or wants some).
	AuthFailed
	// LimitExceeded: the kept objects are more or larger than Limits.
	LimitExceeded
	// Unsafe: an object key is not a path that can be written inside the
	// artifact's tree.
	Unsafe
)

// Error is a failed fetch of a Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err, Other for an error of no Kind.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Other
}

// ErrUnsafeKey marks an object key that is not a plain relative path.
var ErrUnsafeKey = errors.New("the object key is not a safe relative path")

// MaxIgnoreFileBytes bounds the bucket's root .sourceignore.
const MaxIgnoreFileBytes = 1 << 20

// MaxListPageBytes bounds one answer of the listing (a page of at most
// 1,000 keys of at most 1 KiB each is about 1.5 MiB of XML).
const MaxListPageBytes = 8 << 20

// Limits bound one fetch; each must be positive.
type Limits struct {
	// MaxObjects is the most objects kept after prefix and ignore rules.
	MaxObjects int
	// MaxObjectSize is the most bytes of one kept object.
	MaxObjectSize int64
	// MaxTotalSize is the most bytes of the kept objects together.
	MaxTotalSize int64
}

// Options say how to reach a bucket's server.
type Options struct {
	// Endpoint is host[:port].
	Endpoint string
	Region   string
	// Insecure uses plain HTTP.
	Insecure bool
	// AccessKey and SecretKey are static credentials; both empty is
	// anonymous.
	AccessKey, SecretKey string
	// TLS is the client configuration of HTTPS connections; nil is Go's.
	TLS *tls.Config
	// Proxy is the proxy to connect through; nil is the environment's.
	Proxy *url.URL
	// Addresses is where a connection may go (egress.Policy).
	Addresses netguard.Policy
}

// Client fetches the objects of buckets on one server.
type Client struct {
	s3        *minio.Client
	transport *http.Transport
	limits    Limits
}

// New returns a client of the server o names, within limits.
func New(o Options, limits Limits) (*Client, error) {
	t := egress.Transport(o.Addresses)
	if o.TLS != nil {
		t.TLSClientConfig = o.TLS.Clone()
	}
	if o.Proxy != nil {
		t.Proxy = http.ProxyURL(o.Proxy)
	}
	s3, err := minio.New(o.Endpoint, &minio.Options{
		// Empty keys sign nothing: anonymous requests.
		Creds:     credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:    !o.Insecure,
		Region:    o.Region,
		Transport: egress.Excerpts(boundedAnswers{next: t, maxObject: limits.MaxObjectSize}),
		// The controller retries with its own backoff; minio-go's ten
		// retries would only hold a worker longer.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("spec.endpoint %q: %w", o.Endpoint, err)
	}
	return &Client{s3: s3, transport: t, limits: limits}, nil
}

// Close lets go of the client's connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Index is the kept objects of a bucket, by key.
type Index struct {
	objects map[string]object
	// Ignore holds the rules the keys were matched with, for packing the
	// downloaded tree with the same ones.
	Ignore *artifact.Ignorer
}

type object struct {
	etag string
	size int64
}

// Len is the number of kept objects.
func (i *Index) Len() int { return len(i.objects) }

// Revision is Flux's revision of the index: "sha256:<hex>" of its lines
// "<key> <etag>\n" in the order of their keys.
func (i *Index) Revision() string {
	keys := make([]string, 0, len(i.objects))
	for k := range i.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s %s\n", k, i.objects[k].etag)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// List indexes the objects of bucketName under prefix that the ignore
// rules keep: specIgnore (nil: pkg/artifact's defaults) below the
// bucket's root .sourceignore. It fails once the kept objects pass the
// limits, without downloading anything.
func (c *Client) List(ctx context.Context, bucketName, prefix string, specIgnore *string) (*Index, error) {
	ig := artifact.NewIgnorer(specIgnore)
	rules, err := c.ignoreFile(ctx, bucketName)
	if err != nil {
		return nil, err
	}
	if err := ig.AddRules(bytes.NewReader(rules), nil); err != nil {
		return nil, fmt.Errorf("reading %s: %w", artifact.IgnoreFile, err)
	}
	// Ending the listing early must stop minio-go's listing goroutine.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idx := &Index{objects: map[string]object{}, Ignore: ig}
	var total int64
	for o := range c.s3.ListObjects(ctx, bucketName, minio.ListObjectsOptions{
		Prefix: prefix, Recursive: true, UseV1: s3utils.IsGoogleEndpoint(*c.s3.EndpointURL()),
	}) {
		if o.Err != nil {
			return nil, serverError("listing the objects of bucket "+bucketName, o.Err)
		}
		key := o.Key
		if strings.HasSuffix(key, "/") || key == artifact.IgnoreFile {
			continue
		}
		if err := checkKey(key); err != nil {
			return nil, &Error{Kind: Unsafe, Err: fmt.Errorf("object %q of bucket %s: %w", message.Excerpt([]byte(key)), bucketName, err)}
		}
		if _, seen := idx.objects[key]; seen || ig.Match(strings.Split(key, "/"), false) {
			continue
		}
		if len(idx.objects) == c.limits.MaxObjects {
			return nil, &Error{Kind: LimitExceeded, Err: fmt.Errorf("bucket %s holds more than %d objects to fetch (--bucket-max-objects); narrow it with spec.prefix or spec.ignore", bucketName, c.limits.MaxObjects)}
		}
		if o.Size < 0 || o.Size > c.limits.MaxObjectSize {
			return nil, &Error{Kind: LimitExceeded, Err: fmt.Errorf("object %s of bucket %s is %d bytes, over %d (--bucket-max-object-size)", key, bucketName, o.Size, c.limits.MaxObjectSize)}
		}
		if total += o.Size; total > c.limits.MaxTotalSize {
			return nil, &Error{Kind: LimitExceeded, Err: fmt.Errorf("the objects to fetch of bucket %s are more than %d bytes together (--bucket-max-size); narrow it with spec.prefix or spec.ignore", bucketName, c.limits.MaxTotalSize)}
		}
		idx.objects[key] = object{etag: o.ETag, size: o.Size}
	}
	return idx, ctx.Err()
}

// ignoreFile returns the bucket's root .sourceignore, nil without one.
func (c *Client) ignoreFile(ctx context.Context, bucketName string) ([]byte, error) {
	o, err := c.s3.GetObject(ctx, bucketName, artifact.IgnoreFile, minio.GetObjectOptions{})
	if err == nil {
		defer o.Close()
		var b []byte
		b, err = io.ReadAll(io.LimitReader(o, MaxIgnoreFileBytes+1))
		if err == nil && len(b) > MaxIgnoreFileBytes {
			return nil, &Error{Kind: LimitExceeded, Err: fmt.Errorf("%s of bucket %s is over %d bytes", artifact.IgnoreFile, bucketName, MaxIgnoreFileBytes)}
		}
		if err == nil {
			return b, nil
		}
	}
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return nil, nil
	}
	return nil, serverError("reading "+artifact.IgnoreFile+" of bucket "+bucketName, err)
}

// Download writes the objects of idx into dir (which must be empty), each
// at the path its key names, four at a time.
func (c *Client) Download(ctx context.Context, bucketName string, idx *Index, dir string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for key, o := range idx.objects {
		g.Go(func() error { return c.download(ctx, bucketName, key, o, dir) })
	}
	return g.Wait()
}

func (c *Client) download(ctx context.Context, bucketName, key string, o object, dir string) error {
	opts := minio.GetObjectOptions{}
	if o.etag != "" {
		if err := opts.SetMatchETag(o.etag); err != nil {
			return err
		}
	}
	body, err := c.s3.GetObject(ctx, bucketName, key, opts)
	if err != nil {
		return serverError("downloading object "+key+" of bucket "+bucketName, err)
	}
	defer body.Close()
	path := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// O_EXCL: the folder is this fetch's own and every key is a plain
	// path, so nothing is there yet; a link would never be followed.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, o.size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		if minio.ToErrorResponse(err).Code == minio.PreconditionFailed {
			return fmt.Errorf("object %s of bucket %s changed while it was fetched; the next fetch takes the new one", key, bucketName)
		}
		return serverError("downloading object "+key+" of bucket "+bucketName, err)
	case n != o.size:
		return &Error{Kind: LimitExceeded, Err: fmt.Errorf("object %s of bucket %s is not the %d bytes the listing said", key, bucketName, o.size)}
	}
	return nil
}

// checkKey refuses a key that is not a relative path of plain elements.
func checkKey(key string) error {
	if key == "" || strings.ContainsAny(key, "\\\x00") {
		return ErrUnsafeKey
	}
	for _, e := range strings.Split(key, "/") {
		if e == "" || e == "." || e == ".." {
			return ErrUnsafeKey
		}
	}
	return nil
}

// serverError describes a failed request with the server's code and
// message as excerpts (a hostile server chooses them), and its Kind.
func serverError(what string, err error) error {
	kind := Other
	resp := minio.ToErrorResponse(err)
	if resp.Code == "" {
		return &Error{Kind: kind, Err: fmt.Errorf("%s: %w", what, err)}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden,
		resp.Code == "InvalidAccessKeyId", resp.Code == "SignatureDoesNotMatch":
		kind = AuthFailed
	}
	return &Error{Kind: kind, Err: fmt.Errorf("%s: %s: %s", what,
		message.Excerpt([]byte(resp.Code)), message.Excerpt([]byte(resp.Message)))}
}

// boundedAnswers cuts every answer's body: a listing page at
// MaxListPageBytes, an object one byte past maxObject (Download reads one
// byte past the listed size and no more anyway), so neither minio-go's
// XML decoder nor a download reads without end.
type boundedAnswers struct {
	next      http.RoundTripper
	maxObject int64
}

func (t boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	limit := t.maxObject + 1
	if q := req.URL.Query(); q.Has("list-type") || q.Has("location") || q.Has("delimiter") || q.Has("prefix") {
		limit = MaxListPageBytes
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: limit}
	return resp, nil
}

// cappedBody fails a read past left bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("the server's answer is longer than allowed")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
