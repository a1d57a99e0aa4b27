package testenv

import (
	"net/http"
	"strings"
	"sync"
)

// Requests counts the API requests of a client, by method and path, so a
// test can assert what a controller costs the API server: set its
// rest.Config's WrapTransport to Wrap. A dry-run request is counted apart
// (its key ends in " (dry-run)").
type Requests struct {
	mu     sync.Mutex
	counts map[string]int
	// metadata counts, by the same keys, the requests whose answer was
	// asked for as PartialObjectMetadata (MetadataAnswersUnder).
	metadata map[string]int
}

// Wrap counts every request sent through rt.
func (c *Requests) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		key := req.Method + " " + req.URL.Path
		if req.URL.Query().Get("dryRun") != "" {
			key += " (dry-run)"
		}
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[key]++
		if strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata;") {
			if c.metadata == nil {
				c.metadata = map[string]int{}
			}
			c.metadata[key]++
		}
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// Under returns the counts of the requests whose path contains fragment
// (e.g. "/namespaces/<ns>/"), keyed "METHOD path".
func (c *Requests) Under(fragment string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.counts {
		if _, path, _ := strings.Cut(k, " "); strings.Contains(path, fragment) {
			out[k] = n
		}
	}
	return out
}

// MetadataAnswersUnder is Under for the requests that asked for their
// answer as PartialObjectMetadata (the object's metadata, not the whole
// object).
func (c *Requests) MetadataAnswersUnder(fragment string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.metadata {
		if _, path, _ := strings.Cut(k, " "); strings.Contains(path, fragment) {
			out[k] = n
		}
	}
	return out
}

// WritesUnder is Under without the GETs: the writes, and the dry-runs of
// writes (keyed apart).
func (c *Requests) WritesUnder(fragment string) map[string]int {
	out := map[string]int{}
	for k, n := range c.Under(fragment) {
		if method, _, _ := strings.Cut(k, " "); method != http.MethodGet {
			out[k] = n
		}
	}
	return out
}

// Count returns how many requests of the method and path were sent, the
// dry-runs or the others.
func (c *Requests) Count(method, path string, dryRun bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := method + " " + path
	if dryRun {
		key += " (dry-run)"
	}
	return c.counts[key]
}

// Reset forgets every count.
func (c *Requests) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts, c.metadata = nil, nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
