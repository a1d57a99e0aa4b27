// Package target answers where and as whom a Kustomization's or
// HelmRelease's sync writes: in which cluster (the one sync-controller
// runs in, or the remote cluster of spec.kubeConfig) and as which identity
// (the ServiceAccount of spec.serviceAccountName, else of
// --default-service-account, in the object's namespace; else the
// cluster's own: sync-controller's, or the kubeconfig's).
//
// Resolver.Resolve decides it, in one place, and returns a Target: the
// cluster, the ServiceAccount and where its name came from (for messages),
// and the engine whose client acts as that identity there. The clients are
// kept in one cache, Clients, keyed by (cluster, identity) and shared by
// the reconcilers of both kinds: a client per ServiceAccount per cluster,
// and per remote cluster a connection (client, REST mapper, watcher,
// engine), each kept while some object uses it and dropped — a remote
// connection stopped, its informers with it — when the last one is deleted
// or moves elsewhere.
//
// A client that impersonates holds no credentials of the ServiceAccount:
// the API server decides on every request what it may do, so a cached
// client never goes stale. The API server authorizes a ServiceAccount
// that does not exist like any other, by its name and groups, so after a
// refusal ExplainForbidden reads the ServiceAccount and says when it is
// missing, and ServiceAccountGone tells a deletion that nothing can be
// pruned in its name (docs/design/tenancy.md).
//
// A kubeconfig from a Secret is hostile input: it may carry inline
// credentials only, its server must be https and is dialled under the
// netguard address policy (loopback only with
// --allow-loopback-kubeconfig-servers), no proxy is taken from the
// environment unless --remote-cluster-proxy-from-environment, and every
// answer of a remote API server is bounded (limits.go).
// docs/design/remote-clusters.md has the rules.
package target
