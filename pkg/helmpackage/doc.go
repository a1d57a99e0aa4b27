// Package helmpackage builds a HelmChart's package from chart content:
// it loads a chart folder of a source tree or a chart archive with the
// Helm SDK's loader, adds its dependencies (file:// ones from the same
// source tree, remote ones from archives its caller pulled), merges
// valuesFiles over values.yaml, sets the version and packages the result
// with chartutil.Save into deterministic bytes.
//
// It is the part of source-controller's HelmChart reconcile that parses a
// tenant's content — Chart.yaml, Chart.lock, values.yaml and values files,
// YAML that may be crafted to cost gigabytes once parsed — and it runs in
// a chart worker of pkg/renderworker, a process with a hard memory limit,
// never in source-controller itself (docs/design/render-sandbox.md). It
// holds no network and no Kubernetes client: a build is two requests to a
// worker around the parent's downloads.
//
//   - MakePlan loads the chart and walks its file:// dependencies within
//     the source tree, and returns its name, its version and the remote
//     dependencies still needed (repository URL, name, and Chart.lock's
//     version or Chart.yaml's range), each once.
//   - The parent resolves each against its HelmRepository's index or OCI
//     tags and downloads the archive's bytes, bounded and checked against
//     the index's digest, without loading them.
//   - Build loads everything again, loads and adds the pulled archives
//     (each checked to be the chart asked for), merges the values files,
//     sets the version and packages.
//
// Both keep the same budgets: at most MaxDependencies added, file://
// dependencies nesting at most 10 deep and never leaving the source tree
// (symbolic links resolved), every chart loaded within the SDK loader's
// decompressed-size budget (Limits.MaxExtractedBytes, CheckArchive's
// header and entry bounds for archives) and the added dependencies within
// the same budget together.
//
// The same chart, dependencies and options package to the same bytes:
// files and dependencies are sorted by name and every time is fixed, so
// nothing downstream renders again for an unchanged chart.
package helmpackage
