// Package opsview_test is the browser test of the UI's operations
// (docs/ui.md, "Logs and workload actions" and "An OCIRepository"): the
// real UI server, in token mode, against the real kube-apiserver and an
// embedded NATS server (pkg/testenv), with a stand-in kubelet serving the
// Pods' logs (ui/internal/podtest), its pages in Debian's chromium
// (ui/browsertest). Two users sign in: an operator whose RBAC allows the
// logs and the actions, and a viewer whose RBAC refuses them.
package opsview_test
