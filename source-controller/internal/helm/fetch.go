package helm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"

	"helm.sh/helm/v4/pkg/getter"
)

// Fetcher downloads files of one HTTP chart repository with the SDK's
// HTTP getter.
type Fetcher struct {
	// RepoURL is the repository's URL; basic auth goes only to its scheme
	// and host unless Credentials.PassCredentials.
	RepoURL     string
	Credentials Credentials
	// Timeout bounds each request.
	Timeout time.Duration
}

// Get downloads url, refusing more than maxBytes.
func (f Fetcher) Get(url string, maxBytes int64) ([]byte, error) {
	opts := []getter.Option{
		getter.WithURL(f.RepoURL),
		getter.WithTimeout(f.Timeout),
		getter.WithTransport(transport(f.Credentials.TLS, maxBytes, strings.HasPrefix(f.RepoURL, "https://"))),
		getter.WithPassCredentialsAll(f.Credentials.PassCredentials),
		getter.WithUserAgent("plumb-source-controller"),
	}
	if f.Credentials.Username != "" || f.Credentials.Password != "" {
		opts = append(opts, getter.WithBasicAuth(f.Credentials.Username, f.Credentials.Password))
	}
	g, err := getter.NewHTTPGetter(opts...)
	if err != nil {
		return nil, err
	}
	buf, err := g.Get(url)
	if err != nil {
		if errors.Is(err, ErrInsecure) || strings.Contains(err.Error(), ErrInsecure.Error()) {
			return nil, fmt.Errorf("%s: %w", url, ErrInsecure)
		}
		if errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), ErrTooLarge.Error()) {
			return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", url, maxBytes, ErrTooLarge)
		}
		return nil, err
	}
	if int64(buf.Len()) > maxBytes {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", url, maxBytes, ErrTooLarge)
	}
	return buf.Bytes(), nil
}

// IsUnauthorized reports whether err is a refusal of the credentials
// (HTTP 401 or 403), as the getter ("...: 401 Unauthorized") or the
// registry client ("response status code 401: ...") words it, or the
// registry asking for credentials the HelmRepository does not give.
func IsUnauthorized(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return true
	}
	s := err.Error()
	for _, code := range []string{"401", "403"} {
		if strings.Contains(s, ": "+code+" ") || strings.Contains(s, "status code "+code) {
			return true
		}
	}
	return false
}
