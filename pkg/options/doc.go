// Package options holds the command-line options every Plumb controller
// shares, each group with a BindFlags method, so the four programs take the
// same flags for the same things.
//
// Manager binds Flux's leader-election flags with one default changed:
// --enable-leader-election is on, as a replica that is not the leader must
// neither reconcile nor serve artifacts. A single process outside a cluster
// (make run, the e2e tests) passes --enable-leader-election=false.
//
// Manager also binds Flux's --watch-label-selector: an instance reconciles
// only the objects of its controller's kinds that match it (a shard; see
// pkg/app and docs/design/sharding.md), and Manager.ShardName names what
// each shard must own alone, its Lease and its durable NATS consumer.
// And Flux's --watch-all-namespaces: false keeps an instance to the
// objects in $RUNTIME_NAMESPACE (Manager.OnlyRuntimeNamespace, inverted so
// that a zero Manager watches everything, as the flag's default does).
package options
