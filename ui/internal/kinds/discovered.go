package kinds

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Resource is one API resource that a Kind names.
type Resource struct {
	Group, Resource string
	Namespaced      bool
}

// discoveryTimeout bounds one read of the API server's discovery.
const discoveryTimeout = 30 * time.Second

// reloadAfter is how long a kind discovery did not know stays unknown
// before discovery is read again (a CRD installed since): a stream of
// events naming made-up kinds costs a read a minute, not one each.
const reloadAfter = time.Minute

// Discovered finds the resources of any kind by its Kind alone, from the
// API server's discovery, for names that carry no API group: a drift
// change's object ("Deployment/apps/web", pkg/object's ID text). A Kind
// that several groups serve gives them all; a caller that checks access
// asks of each.
type Discovered struct {
	client discovery.DiscoveryInterface
	now    func() time.Time

	mu     sync.Mutex
	byKind map[string][]Resource
	loaded time.Time
}

// NewDiscovered reads discovery with cfg (the server's identity: which
// kinds exist is no secret, and a user may not be allowed to read it).
func NewDiscovered(cfg *rest.Config) (*Discovered, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = discoveryTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Discovered{client: dc, now: time.Now}, nil
}

// Resources returns the resources of kind (its exact Kind name); none for
// a kind the API server does not serve, or when discovery cannot be read.
func (d *Discovered) Resources(kind string) []Resource {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.byKind[kind]; ok {
		return r
	}
	if d.byKind != nil && d.now().Sub(d.loaded) < reloadAfter {
		return nil
	}
	d.load()
	return d.byKind[kind]
}

// load reads discovery; d.mu is held. A group that fails to answer (an
// aggregated API that is down) leaves out its kinds, not the others'.
func (d *Discovered) load() {
	d.loaded = d.now()
	lists, err := discovery.ServerPreferredResources(d.client)
	if err != nil && len(lists) == 0 {
		if d.byKind == nil {
			d.byKind = map[string][]Resource{}
		}
		return
	}
	byKind := map[string][]Resource{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") { // a subresource
				continue
			}
			byKind[r.Kind] = append(byKind[r.Kind], Resource{Group: gv.Group, Resource: r.Name, Namespaced: r.Namespaced})
		}
	}
	d.byKind = byKind
}
