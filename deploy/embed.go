// Package deploy carries Plumb's install, this folder, inside the Go
// programs that need it: the plumb CLI renders it for `plumb install`
// (and bootstrap commits the same output). The YAML here stays the one
// source for `kubectl apply -k deploy/` as well; this file only makes the
// folder readable from Go, because go:embed cannot reach outside its own
// module.
package deploy

import "embed"

// FS holds the kustomize base (kustomization.yaml, crds/, the
// controllers' folders, nats/, network-policies/) and components/, at
// the same paths as in the repository. examples/ and the READMEs are left
// out: nothing renders them.
//
//go:embed kustomization.yaml namespace.yaml config.yaml
//go:embed crds/*.yaml
//go:embed source-controller render-controller sync-controller notification-controller image-controller
//go:embed nats network-policies components
var FS embed.FS
