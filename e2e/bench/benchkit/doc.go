// Package benchkit holds what the benchmarks that run against e2e/localenv's
// control plane (e2e/bench/fleet, e2e/bench/helmrelease) measure with, so
// that their figures mean the same: the API server's request counter read
// from its /metrics before and after (exact, by verb and resource), each
// measured process's own client-go request counter, its CPU seconds and
// peak resident memory (VmHWM) from /proc, the same for kube-apiserver and
// etcd; MemSampler, the proportional set size of a process together with
// the worker processes it started, sampled through a run; the loops that write many objects at once (ForEach, and
// ApplyAll, the bare server-side-apply loop the controllers are measured
// against); EnsureNamespaces, which waits out kube-controller-manager's
// work on new namespaces before anything is counted; and Follow, a watch
// opened again from its last resourceVersion when the server ends it
// (client-go's RetryWatcher, with a 410 Gone an error rather than a
// silent gap in a figure); and PinTree, which confines a process, its
// threads and its children to some CPUs (the control plane apart from
// the controllers, as production runs it).
// pkg/benchfig holds what every benchmark states its figures with
// (percentiles, rounding, the load average).
package benchkit
