// Command ui serves Plumb's web UI: every GitRepository, Kustomization and
// HelmRelease with its health, drift and history, updated live. It
// reconciles nothing and stores nothing; docs/design/ui.md is the contract
// between its parts, and package plumb.dev/ui/server is the server itself
// (which `plumb ui` runs in-process).
package main
