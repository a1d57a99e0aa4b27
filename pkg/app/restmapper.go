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
// controller-runtime's lazy discovery mapper behind KeepMappings.
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	lazy, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return KeepMappings(lazy), nil
}

// KeepMappings returns lazy with the answers of RESTMapping kept: a kind
// looked up again is answered from a map, without lazy's walk of every
// API group. lazy must be controller-runtime's lazy mapper, or another
// whose answers change only in a call that misses (below), and it must be
// reached through the returned mapper alone.
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
// Freshness: lazy reloads what it knows only when a lookup misses in it
// (a kind or version it does not have), and a reload may change its
// answers for any group (with aggregated discovery it refreshes every
// group from one document, so a kind removed from another group's version
// goes too). So every call that is not answered from the kept mappings —
// a RESTMapping of a kind not kept, or any other method — first drops all
// of them, and its answer is kept only when no other call to lazy ran at
// the same time (one of them may have reloaded lazy before or after it
// answered). What this mapper answers is therefore what lazy would answer:
// a CRD installed after start is found as lazy finds it, and a kind whose
// CRD is made again with another version is found at that version. Errors
// are never kept. A mapping returned is shared: callers must not change it
// (controller-runtime's client keeps them too).
func KeepMappings(lazy meta.RESTMapper) meta.RESTMapper {
	k := &keptMappings{lazy: lazy}
	k.kept.Store(&map[mappingKey]*meta.RESTMapping{})
	return k
}

type keptMappings struct {
	lazy meta.RESTMapper
	// kept is replaced, never changed in place: a lookup reads it without a
	// lock.
	kept atomic.Pointer[map[mappingKey]*meta.RESTMapping]

	mu sync.Mutex // guards what follows and the replacement of kept
	// calls counts the calls to lazy that may reload it, inFlight those of
	// them not yet returned.
	calls    uint64
	inFlight int
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

// lazyCall is one call to lazy that may reload it.
type lazyCall struct {
	n     uint64
	alone bool // no other call was in flight when it began
}

// begin drops the kept mappings and notes a call to lazy.
func (k *keptMappings) begin() lazyCall {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	c := lazyCall{n: k.calls, alone: k.inFlight == 0}
	k.inFlight++
	if len(*k.kept.Load()) > 0 {
		k.kept.Store(&map[mappingKey]*meta.RESTMapping{})
	}
	return c
}

// end notes that call c returned mapping for key (nil: nothing to keep),
// and keeps it when no other call to lazy overlapped c.
func (k *keptMappings) end(c lazyCall, key mappingKey, mapping *meta.RESTMapping) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.inFlight--
	if mapping == nil || !c.alone || c.n != k.calls {
		return
	}
	old := *k.kept.Load()
	kept := make(map[mappingKey]*meta.RESTMapping, len(old)+1)
	for key, m := range old {
		kept[key] = m
	}
	kept[key] = mapping
	k.kept.Store(&kept)
}

// RESTMapping answers from the kept mappings, or asks lazy and keeps its
// answer.
func (k *keptMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := keyOf(gk, versions)
	if m, ok := (*k.kept.Load())[key]; ok {
		return m, nil
	}
	c := k.begin()
	m, err := k.lazy.RESTMapping(gk, versions...)
	if err != nil {
		m = nil
	}
	k.end(c, key, m)
	return m, err
}

// The other methods are lazy's, each a call that may reload it.

func (k *keptMappings) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	c := k.begin()
	defer k.end(c, mappingKey{}, nil)
	return k.lazy.RESTMappings(gk, versions...)
}

func (k *keptMappings) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	c := k.begin()
	defer k.end(c, mappingKey{}, nil)
	return k.lazy.KindFor(resource)
}

func (k *keptMappings) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	c := k.begin()
	defer k.end(c, mappingKey{}, nil)
	return k.lazy.KindsFor(resource)
}

func (k *keptMappings) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	c := k.begin()
	defer k.end(c, mappingKey{}, nil)
	return k.lazy.ResourceFor(input)
}

func (k *keptMappings) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	c := k.begin()
	defer k.end(c, mappingKey{}, nil)
	return k.lazy.ResourcesFor(input)
}

// ResourceSingularizer never reloads lazy.
func (k *keptMappings) ResourceSingularizer(resource string) (string, error) {
	return k.lazy.ResourceSingularizer(resource)
}
