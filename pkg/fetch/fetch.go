package fetch

import (
	"bytes"
	"context"
	_ "crypto/sha256" // the hash go-digest uses for sha256
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	godigest "github.com/opencontainers/go-digest"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Options bound a download.
type Options struct {
	// Client does the requests; http.DefaultClient when nil.
	Client *http.Client
	// MaxSize is the largest body accepted, in bytes; 0 means 64 MiB.
	MaxSize int64
	// Attempts is how many times a failed request is tried; 0 means 4.
	Attempts int
	// Backoff is the wait after the first failure, doubled after each; 0
	// means 250ms.
	Backoff time.Duration
}

// DigestMismatchError says the downloaded bytes are not the ones announced.
type DigestMismatchError struct {
	URL, Want, Got string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("artifact %s has digest %s, want %s: refusing a tampered or partial artifact", e.URL, e.Got, e.Want)
}

// ErrTooLarge says the body is larger than Options.MaxSize.
var ErrTooLarge = errors.New("over the size limit")

// StatusError is an answer other than 200 OK: a 404 says the artifact is
// no longer served.
type StatusError struct {
	URL    string
	Code   int
	Status string
}

func (e *StatusError) Error() string { return fmt.Sprintf("downloading %s: HTTP %s", e.URL, e.Status) }

// Bytes downloads url and returns its body when its sha256 equals digest
// ("sha256:<hex>"). Server errors and network errors are retried; a digest
// mismatch, a 404 or an oversized body are not, since retrying cannot help.
func Bytes(ctx context.Context, url, digest string, opts Options) ([]byte, error) {
	want, err := parseDigest(digest)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var body []byte
	var lastErr, final error
	err = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: opts.Backoff, Factor: 2, Steps: opts.Attempts},
		func(ctx context.Context) (bool, error) {
			b, retry, err := get(ctx, opts, url)
			switch {
			case err == nil:
				body = b
				return true, nil
			case !retry:
				final = err
				return false, err
			}
			lastErr = err
			return false, nil
		})
	switch {
	case err == nil:
	case final != nil:
		return nil, final
	case ctx.Err() != nil && lastErr != nil:
		return nil, fmt.Errorf("downloading %s: %w (last error: %w)", url, ctx.Err(), lastErr)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("downloading %s: %w", url, ctx.Err())
	default: // every attempt failed
		return nil, lastErr
	}
	if got := godigest.FromBytes(body); got != want {
		return nil, &DigestMismatchError{URL: url, Want: digest, Got: got.String()}
	}
	return body, nil
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 64 << 20
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	return o
}

// get does one request; retry says whether another attempt may succeed.
func get(ctx context.Context, opts Options, url string) (body []byte, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("downloading %s: %w", url, err)
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("downloading %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		return nil, retry, &StatusError{URL: url, Code: resp.StatusCode, Status: resp.Status}
	}
	if resp.ContentLength > opts.MaxSize {
		return nil, false, fmt.Errorf("downloading %s: %d bytes is over the limit of %d: %w", url, resp.ContentLength, opts.MaxSize, ErrTooLarge)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		// Room for the announced body (within MaxSize, checked above) and
		// the read that finds its end: the buffer is allocated once, not
		// doubled from 512 bytes up to twice the artifact.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	n, err := io.Copy(&buf, io.LimitReader(resp.Body, opts.MaxSize+1))
	if err != nil {
		return nil, true, fmt.Errorf("downloading %s: %w", url, err)
	}
	if n > opts.MaxSize {
		return nil, false, fmt.Errorf("downloading %s: the body is over the limit of %d bytes: %w", url, opts.MaxSize, ErrTooLarge)
	}
	return buf.Bytes(), false, nil
}

func parseDigest(digest string) (godigest.Digest, error) {
	d, err := godigest.Parse(digest)
	if err != nil || d.Algorithm() != godigest.SHA256 {
		return "", fmt.Errorf("digest %q is not sha256:<64 lower-case hex digits>", digest)
	}
	return d, nil
}
