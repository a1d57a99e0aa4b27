// Command helmreleasebench is `make bench-helmrelease`: Plumb's HelmRelease
// against Flux's helm-controller on one control plane (e2e/localenv: etcd,
// kube-apiserver, kube-controller-manager and the pod simulator, so
// Deployments become available and both sides' health checks pass).
//
// Each side gets -n (100) HelmReleases of one small chart (chart.go: a
// Deployment, a headless Service and a ConfigMap), each into a namespace
// of its own, with the same interval and drift detection enabled. The
// sides run one after the other: Plumb first, with its four controllers;
// then Plumb's controllers are stopped, Flux's CRDs installed (those of
// the helm-controller version hack/helm-controller.sh built, and
// source-controller's of the version it requires) and bin/helm-controller
// started. Plumb's side gets its chart as its users do, a HelmRepository
// and one HelmChart that every chartRef names; Flux's, without Flux's
// source-controller, from one ExternalArtifact whose status the bench
// writes, pointing at the packaged chart it serves on 127.0.0.1
// (sources.go).
//
// The phases of each side (phases.go), each timed from its first write
// until the last HelmRelease caught up, seen by a watch:
//
//   - install: the HelmReleases created (32 requests in flight) until each
//     is Ready at its generation with a deployed release in
//     status.history;
//   - upgrade: spec.values changed on all (the Pods roll out) until each
//     is Ready with a release of a new config digest;
//   - no-op: each asked to reconcile now (the side's requestedAt
//     annotation) until each reports it handled (lastHandledReconcileAt);
//   - drift: -drift-edits Deployments scaled by hand at once, each timed
//     until a watch sees the chart's replicas again; Flux corrects drift
//     at its next reconcile, so its figure is bounded by -interval.
//
// Requests are counted at the API server (benchkit: apiserver_request_total
// before and after, the bench's own writes left out), CPU from /proc for
// each controller process and for kube-apiserver and etcd. The load
// average is taken before each side. The floor, after both sides, applies
// the same objects with a bare server-side-apply loop and no controller.
// The method and recorded runs: docs/bench/helm-release.md.
//
// Memory is counted two ways. The fair figure is the proportional set
// size (benchkit.MemSampler): every -mem-every (0.5 s) through the side,
// the Pss of each controller plus that of every process it started —
// render-controller's render workers, source-controller's chart workers,
// which are the same binary re-executed and share most of its pages — read
// from /proc/<pid>/smaps_rollup; a figure is the largest sum over one
// sample of the processes it names. Pss counts each shared page once in
// all (divided among the processes mapping it), so a controller that
// renders in two workers and one that renders in its own process, as
// helm-controller does, are measured alike; helm-controller, one process,
// gets the same sampling. Sampling can miss a burst shorter than the
// interval, so each process's exact peak, VmHWM from /proc/<pid>/status
// at the end of the side, is kept too (controllers only: it adds up
// shared pages once per process, and leaves the workers out), and the
// largest VmHWM seen of one render worker.
//
// It is a benchmark, not a test: nothing here asserts a duration, and it
// is not part of `make test` or `make bench`.
package main
