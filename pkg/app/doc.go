// Package app starts what every Plumb controller runs around its reconcilers:
// the logger, the controller-runtime manager with /metrics, /healthz and
// /readyz, leader election, and the scheme with Plumb's APIs.
package app
