// Package install renders Plumb's install, deploy/ as this binary carries
// it (plumb.dev/deploy), applies it to a cluster, and takes it away again:
// the work behind `plumb install`, `plumb uninstall` and `plumb check
// --pre`, kept apart from the commands so that bootstrap can commit the
// very output install applies.
//
// # Render
//
// Render builds deploy/ with kustomize's Go API (krusty) on an in-memory
// copy of the embedded folder, the way `kubectl apply -k deploy/` builds
// it, after two changes made in memory only: deploy/kustomization.yaml's
// resources lose the controllers not among Options.Components (and
// network-policies/ with NetworkPolicy off), and an overlay adds the
// extras (components/ui), retags Plumb's images (<registry>/<program>:
// <version>; NATS's too when the registry is not the default) and
// appends --watch-all-namespaces=false to the controllers. The repository
// folder stays the one source: nothing here repeats a manifest. YAML
// writes the result as one multi-document stream (--export).
//
// # Apply
//
// Apply applies server-side, as field manager "plumb" with force: the
// namespace and CRDs first, waiting until every CRD is Established; then
// the Secret nats-credentials, created with a random password per NATS
// user when it does not exist and never touched when it does; then the
// rest. WaitReady waits until every Deployment is rolled out as `kubectl
// rollout status` decides (DeploymentReady, which `plumb check` uses
// too), printing each change.
//
// # Uninstall
//
// Uninstall follows `flux uninstall`'s order, which leaves every workload
// Plumb applied running: the controllers' Deployments (and the wait until
// their pods are gone, so that none prunes) with sync-controller's
// MutatingAdmissionPolicy (which would put a finalizer back), the rest of
// the install; then the finalizers of every object of Plumb's kinds; then
// the CRDs, whose deletion deletes those objects alone; then the namespace.
//
// # Precheck
//
// Precheck compares the server's version with MinKubernetes and asks, with
// SelfSubjectAccessReviews, whether the caller may create and patch every
// kind the install applies where it applies it.
package install
