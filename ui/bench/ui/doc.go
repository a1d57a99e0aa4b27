// Command uibench measures how soon the web UI's overview shows its first
// screen of rows with 1,000 Kustomizations, the target of issue 16 ("the
// first screen in under 1 second"), and prints a table. `make bench-ui`
// runs it.
//
// It starts the real control plane (pkg/testenv: kube-apiserver, etcd,
// NATS), creates -kustomizations Kustomizations across -namespaces
// namespaces with a few GitRepositories each, and writes their status
// through the status subresource as the controllers would (Ready, revision,
// a 20-object inventory, drift: mostly none, some corrected, drifted or
// contested; a few not Ready). It then starts the UI server in this process
// (package server, kubeconfig mode with the administrator's config, served
// by httptest) and, in the same run, measures:
//
//   - the first screen: Debian's chromium (ui/browsertest) navigates from
//     about:blank to the overview, a full page load (the app's files come
//     from the browser's cache after the first run, as for a returning
//     user), and the page itself reports performance.now() — milliseconds
//     since the navigation started — at the first animation frame in which
//     `.overview-list .vrow:not(.loading)` is visible with a name in it;
//   - the baseline: GET /api/overview?limit=100 with the same session's
//     cookie from Go, the first page of the API alone;
//   - how many rows the DOM holds then (the list is virtual: it renders
//     the rows in view, not all 1,000).
//
// Time is the median of -runs and the fastest (on shared cores other work
// only adds time, so the fastest is the figure least disturbed by it).
//
//	go run ./ui/bench/ui [-kustomizations 1000] [-namespaces 20] [-runs 10]
//
// It is a benchmark, not a test: nothing here asserts a duration.
package main
