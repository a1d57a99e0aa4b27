// Package deploytest checks Plumb's install, deploy/, the way a cluster
// would take it. It has no code of its own, only tests:
//
//   - the base renders with kustomize's Go API (krusty), as
//     `kubectl apply -k deploy/` does, and deploy/crds/kustomization.yaml
//     lists every CRD that `make manifests` generates;
//   - every rendered object passes a server-side dry-run create on a real
//     kube-apiserver (pkg/testenv), CRDs first, and is then created;
//   - the Deployments carry the probes, resources and security context the
//     install promises, and their Services and flags agree with them;
//   - the RBAC covers what each controller's code calls: a table of
//     (controller, group, resource, verb) read from the code is checked with
//     SubjectAccessReviews as each ServiceAccount, together with calls a
//     controller does not make, which must be denied, and a few real calls
//     made while impersonating the ServiceAccounts; sync-controller's own
//     impersonation of a tenant's ServiceAccount (spec.serviceAccountName)
//     is checked with a real token of its ServiceAccount, since
//     impersonation does not chain;
//   - each Deployment runs the image `make images` builds for its program
//     (pkg/imagebuild): its repository, its entrypoint, its user.
//
// When a controller starts calling something new, add the call to the
// table in rbac_test.go and the rule to deploy/<controller>/rbac.yaml.
package deploytest
