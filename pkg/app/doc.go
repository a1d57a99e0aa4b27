// Package app starts what every Plumb controller runs around its reconcilers:
// the logger, the controller-runtime manager with /metrics, /healthz and
// /readyz, leader election, and the scheme with Plumb's APIs.
//
// # Leader election
//
// On by default (pkg/options: --enable-leader-election), so two replicas
// never reconcile, write or serve at once. The Lease is kept in
// $RUNTIME_NAMESPACE (RuntimeNamespaceEnv), which deploy/ sets to the pod's
// namespace; in a cluster without it controller-runtime takes the pod's
// namespace, and outside a cluster NewManager refuses to start without it,
// saying to set it or to pass --enable-leader-election=false (what every
// local runner does: make run, the e2e tests).
//
// # Sharding
//
// With --watch-label-selector (pkg/options), NewManager's cache keeps only
// the objects of the controller's own kinds (the ownKinds it is given)
// whose labels match, so the instance reconciles its shard alone; every
// other kind it reads stays whole, as a Kustomization's source or a
// managed object may belong to another shard. The leader-election Lease is
// named after the selector (options.Manager.ShardName), so each shard
// elects its own leader. What is filtered and why: docs/design/sharding.md.
//
// # One namespace
//
// With --watch-all-namespaces=false (pkg/options; Flux's flag), the cache
// of the controller's own kinds holds only the objects in
// $RUNTIME_NAMESPACE, so the instance reconciles that namespace alone
// (`plumb install --watch-all-namespaces=false`). Other kinds stay whole,
// as with a shard: sources and managed objects may live elsewhere.
//
// # Readiness
//
// /readyz answers once the manager runs. AddArtifactServer adds source- and
// render-controller's artifact server, which runs on the leader only, with
// the check "artifact-server": a replica is ready only while its server
// serves, so the Service that artifact URLs name routes to the leader.
//
// # Memory
//
// NewManager sets the garbage collector's target to DefaultGCPercent (50)
// unless GOGC is set (gc.go): a controller's live heap is small, so half
// the default headroom costs little CPU and is measured in its peak
// memory. Render and chart workers, the same binaries re-executed, set
// their own (pkg/renderworker).
//
// # REST mappings
//
// The manager's REST mapper is controller-runtime's lazy discovery mapper
// with its answers kept (KeepMappings, restmapper.go): every status write
// and object apply looks a kind up, and controller-runtime's mapper walks
// every API group and allocates an error for each that lacks the kind, a
// tenth of sync-controller's allocations in a fleet sync. Neither
// controller-runtime nor client-go keeps the answers (client-go's
// DeferredDiscoveryRESTMapper keeps discovery, not mappings), so Plumb
// does. controller-runtime's mapper changes its answers only by reloading
// from discovery requests (on a lookup that misses in it), so the mapper
// counts those requests and drops every kept answer when one starts: a
// CRD installed later, or made again at another version, is found as
// controller-runtime finds it.
//
// # Watches decoded in one pass
//
// The cache lists and watches the controller's own kinds (the ownKinds
// that are Plumb's, pkg/kinds) through pkg/typedwatch: each JSON watch
// event is decoded once into the typed object, where client-go reads it
// about nine times, and each status write of a Kustomization comes back as
// such an event to both controllers that write it. The lists and watches
// carry the same selectors and namespace as controller-runtime's would
// (onePassKinds, from the cache's ByObject); a kind kept in several
// namespaces keeps controller-runtime's watch. Every other kind, and
// every metadata-only watch, is controller-runtime's.
//
// # Panics
//
// Every controller of the manager recovers a panic of its reconciler
// (controller-runtime's RecoverPanic, set manager-wide): the reconcile
// fails with "panic: … [recovered]", which is logged with the stack,
// counted in controller_runtime_reconcile_panics_total and retried with
// backoff. Goroutines of their own that read untrusted input use
// pkg/panics.
package app
