// Package bootstrap makes a cluster manage Plumb from Git, as `flux
// bootstrap git` does for Flux: it commits the install manifests
// (cli/internal/install's render for the chosen options) and a
// GitRepository and Kustomization of the repository's path to a branch,
// so that after the install Plumb reconciles its own Deployments, CRDs and
// RBAC from Git, and a later commit upgrades it.
//
// The files, under <path>/plumb-system/ as Flux keeps flux-system/:
//
//	plumb-components.yaml   the install (install.Render, install.YAML)
//	plumb-sync.yaml         GitRepository and Kustomization plumb-system
//	kustomization.yaml      the two above
//
// The Kustomization builds <path> itself, where render-controller
// generates a kustomization.yaml when there is none (pkg/render), as
// kustomize-controller does: what else the path holds (the cluster's
// applications) comes with it. It runs as the ServiceAccount
// sync-controller of plumb-system, which deploy/ binds to cluster-admin,
// since it applies CRDs and cluster roles; deploy/ starts sync-controller
// with --default-service-account=default, which would otherwise give it
// the rights of the namespace's default ServiceAccount, none.
//
// Git is written with go-git (a clone in memory, one commit, a push);
// nothing is committed or pushed when the files are already as rendered,
// so bootstrap run again with the same options changes nothing in Git.
// The credentials given for the push are also written, as the Secret
// plumb-system the GitRepository names, with the keys source-controller
// reads (username, password, bearerToken, ca.crt).
package bootstrap
