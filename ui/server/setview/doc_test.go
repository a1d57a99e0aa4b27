// Package setview_test is the browser test of the UI's ObjectSet page and
// of the selective-sync picker (docs/ui.md, "An ObjectSet" and "Selective
// sync"): the real UI server, in token mode, against the real
// kube-apiserver and an embedded NATS server (pkg/testenv), its pages in
// Debian's chromium (ui/browsertest). An operator whose RBAC allows the
// sync and a viewer whose RBAC refuses it sign in.
package setview_test
