// Package apivalidation checks Plumb's CRDs in a real API server: that each
// installs and is established, that valid objects round-trip, that invalid
// ones are refused with a message a person understands, and that Flux v1
// manifests are accepted after changing only their apiVersion.
//
// It has no code of its own; the CRDs come from deploy/crds through
// pkg/testenv.
package apivalidation
