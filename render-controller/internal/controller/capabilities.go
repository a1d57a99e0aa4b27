package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/discovery"

	"plumb.dev/pkg/helmrender"
)

// DefaultCapabilitiesTTL is how long discovered capabilities are used
// before they are asked for again, when nothing invalidated them sooner.
const DefaultCapabilitiesTTL = 5 * time.Minute

// Capabilities are the cluster's capabilities as Helm templates see them
// (.Capabilities.KubeVersion, .Capabilities.APIVersions), from the API
// server's discovery. They are kept for TTL and dropped at once when a
// CustomResourceDefinition changes (Invalidate; for a few seconds after, a
// render asks discovery again each time), so that a chart's
// `.Capabilities.APIVersions.Has "<group>/<version>/<Kind>"` sees a CRD
// soon after it is installed, without asking discovery for every render.
type Capabilities struct {
	// Discovery is asked for the server version and the served groups and
	// resources.
	Discovery discovery.DiscoveryInterface
	// TTL bounds the age of what is kept; zero is DefaultCapabilitiesTTL.
	TTL time.Duration

	mu      sync.Mutex
	caps    *helmrender.Capabilities
	digest  string
	fetched time.Time
	// invalidated is when a CRD last changed.
	invalidated time.Time
}

// capabilitiesSettle is how long after a CRD change discovery is not
// trusted to show it yet: the API server serves a new CRD's version a
// moment after it reports it Established, so what is fetched in that
// moment is used once and not kept.
const capabilitiesSettle = 10 * time.Second

// Get returns the capabilities and their digest (which a render's cache key
// includes: a new API version may change what a chart renders).
func (c *Capabilities) Get(ctx context.Context) (helmrender.Capabilities, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultCapabilitiesTTL
	}
	if c.caps != nil && time.Since(c.fetched) < ttl && c.fetched.Sub(c.invalidated) > capabilitiesSettle {
		return *c.caps, c.digest, nil
	}
	caps, err := discover(c.Discovery)
	if err != nil {
		return helmrender.Capabilities{}, "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", caps.KubeVersion)
	for _, v := range caps.APIVersions {
		fmt.Fprintf(h, "%s\n", v)
	}
	c.caps, c.digest, c.fetched = &caps, hex.EncodeToString(h.Sum(nil)), time.Now()
	return caps, c.digest, nil
}

// Invalidate drops what is kept: the next Get asks discovery again.
func (c *Capabilities) Invalidate() {
	c.mu.Lock()
	c.caps = nil
	c.invalidated = time.Now()
	c.mu.Unlock()
}

// discover reads the server version and the served API versions, as Helm's
// own client does (action.GetVersionSet): every "<group>/<version>" and
// every "<group>/<version>/<Kind>" (core kinds as "v1/<Kind>"; the kinds
// of subresources too, as Helm lists them), sorted. A
// group whose discovery fails (an aggregated API server that is down) is
// left out rather than failing every render, as in Helm.
func discover(d discovery.DiscoveryInterface) (helmrender.Capabilities, error) {
	v, err := d.ServerVersion()
	if err != nil {
		return helmrender.Capabilities{}, fmt.Errorf("reading the Kubernetes version from discovery: %w", err)
	}
	groups, resources, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return helmrender.Capabilities{}, fmt.Errorf("reading the served API versions from discovery: %w", err)
	}
	set := map[string]struct{}{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			set[gv.GroupVersion] = struct{}{}
		}
	}
	for _, list := range resources {
		for _, r := range list.APIResources {
			set[path.Join(list.GroupVersion, r.Kind)] = struct{}{}
		}
	}
	versions := make([]string, 0, len(set))
	for k := range set {
		versions = append(versions, k)
	}
	slices.Sort(versions)
	return helmrender.Capabilities{KubeVersion: v.GitVersion, APIVersions: versions}, nil
}
