package app

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewRESTMapper is the manager's REST mapper (ctrl.Options.MapperProvider):
// controller-runtime's lazy discovery mapper with the answers of
// RESTMapping kept.
//
// Why keep them: meta.PriorityRESTMapper, under controller-runtime's lazy
// mapper, asks the mapper of every API group it knows on each lookup and
// allocates a NoMatch error for each group that does not have the kind.
// sync-controller resolves each object it applies and each status write of
// its metadata client through it: a tenth of its allocations in a fleet
// sync (docs/bench/fleet.md, "Fleet runs P1–P3"). Neither controller-runtime
// nor client-go keeps the answers: client-go's DeferredDiscoveryRESTMapper
// keeps the discovery documents (controller-runtime's mapper does too) and
// walks them on every call all the same.
//
// Freshness: the lazy mapper's answers change only when it reloads, and it
// reloads only from discovery requests to the API server (on a lookup that
// misses in it: a kind or version it does not have; with aggregated
// discovery one request refreshes every group). The mapper counts the
// discovery requests its lazy mapper sends, and the kept answers hold only
// while that count is the one they were found at: an answer is kept only
// when no discovery request started during its lookup, and all of them are
// dropped when one starts. What this mapper answers is therefore what the
// lazy mapper would answer: a CRD installed after start is found as it
// finds it, and a kind whose CRD is made again with another version is
// found at that version. Errors are never kept. A mapping returned is
// shared: callers must not change it (controller-runtime's client keeps
// them too).
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	k := &keptMappings{}
	k.kept.Store(&keptSet{})
	counted := *httpClient
	next := httpClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	counted.Transport = countDiscovery{next: next, count: &k.discoveries}
	lazy, err := apiutil.NewDynamicRESTMapper(cfg, &counted)
	if err != nil {
		return nil, err
	}
	k.RESTMapper = lazy
	return k, nil
}

// countDiscovery counts the requests of a lazy mapper's discovery client,
// as each one starts.
type countDiscovery struct {
	next  http.RoundTripper
	count *atomic.Uint64
}

func (c countDiscovery) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(req)
}

// keptMappings is the lazy mapper (embedded: its other methods are its
// own) with the answers of RESTMapping kept.
type keptMappings struct {
	meta.RESTMapper
	// discoveries counts the lazy mapper's discovery requests.
	discoveries atomic.Uint64
	// kept is replaced, never changed in place: a lookup reads it without
	// a lock.
	kept atomic.Pointer[keptSet]
	mu   sync.Mutex // serializes replacements of kept
}

// keptSet holds answers found while the lazy mapper had sent discoveries
// discovery requests.
type keptSet struct {
	discoveries uint64
	mappings    map[mappingKey]*meta.RESTMapping
}

// mappingKey is one RESTMapping question: the kind and the versions asked
// for, joined (most callers ask for one version or none).
type mappingKey struct {
	kind     schema.GroupKind
	versions string
}

func keyOf(gk schema.GroupKind, versions []string) mappingKey {
	switch len(versions) {
	case 0:
		return mappingKey{kind: gk}
	case 1:
		return mappingKey{kind: gk, versions: versions[0]}
	}
	return mappingKey{kind: gk, versions: strings.Join(versions, ",")}
}

// RESTMapping answers from the kept mappings, or asks the lazy mapper and
// keeps its answer.
func (k *keptMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := keyOf(gk, versions)
	discoveries := k.discoveries.Load()
	if set := k.kept.Load(); set.discoveries == discoveries {
		if m, ok := set.mappings[key]; ok {
			return m, nil
		}
	}
	m, err := k.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		k.keep(discoveries, key, m)
	}
	return m, err
}

// keep keeps m, found at discoveries, unless a discovery request started
// since.
func (k *keptMappings) keep(discoveries uint64, key mappingKey, m *meta.RESTMapping) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.discoveries.Load() != discoveries {
		return
	}
	next := &keptSet{discoveries: discoveries, mappings: map[mappingKey]*meta.RESTMapping{key: m}}
	if set := k.kept.Load(); set.discoveries == discoveries {
		for key, m := range set.mappings {
			next.mappings[key] = m
		}
	}
	k.kept.Store(next)
}
