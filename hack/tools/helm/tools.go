//go:build tools

// Package tools pins the helm CLI that `make bench-helm` compares
// pkg/helmrender with: the same SDK version as pkg/go.mod.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
