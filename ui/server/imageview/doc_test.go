// Package imageview_test is the browser test of the image views
// (docs/ui.md, "Image automation"): the real UI server, in kubeconfig
// mode, against the real kube-apiserver and an embedded NATS server
// (pkg/testenv), its pages in Debian's chromium (ui/browsertest). It is
// a package of its own because ui/server's tests run without NATS.
package imageview_test
