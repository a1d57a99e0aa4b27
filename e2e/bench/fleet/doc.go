// Command fleetbench is `make bench-fleet`: Plumb with many small
// Kustomizations, the shape of a fleet, measured against the real control
// plane with the four controllers running as processes, each N in a fresh
// environment started by e2e/localenv (as `make run` and the e2e tests
// start it). It prints a table with the targets of issue 20 (1,000
// Kustomizations Ready in 25 s and within 3× the bare loop, 150 MiB per
// controller, requests at rest that do not grow with N, drift p50 0.2 s
// and p99 0.5 s, the single Kustomization within 1.3× the bare loop).
//
// For each N (-n, default 100,500,1000; -with-5000 adds 5,000):
//
//   - N+1 namespaces are created and kube-controller-manager's work on them
//     (default ServiceAccounts) waited out; -repos GitRepositories (5) are
//     seeded on localenv's Git server and made Ready, so the Kustomizations
//     start from ready-made source artifacts;
//   - the bare loop: the same 4·N objects (named bare-…, without Plumb's
//     labels, in the same namespaces) server-side-applied with force by
//     -bare-workers (16, sync-controller's --apply-concurrency);
//   - N Kustomizations are created at once (32 creates in flight) and a
//     watch notes when each is first Ready at its generation with its four
//     objects in the inventory: the time until all are Ready, and the
//     median one;
//   - requests are counted at the API server (apiserver_request_total from
//     its /metrics, before and after: exact, and broken down by verb and
//     resource), and by each controller (client-go's
//     rest_client_requests_total on its metrics port); CPU seconds
//     (utime+stime) and peak memory (VmHWM) come from /proc/<pid>;
//   - the tail (tail.go): for each Kustomization, when its create
//     returned, its render was offered on render-controller's feed (the
//     bench reads the feed as a second subscriber), its ConfigMap was
//     first seen and it was Ready; their p50/p90/p99/max beside the
//     floor's status writes, the timelines of the last Ready, every
//     second's counts and CPU per process, and render- and
//     sync-controller's reconciles and queue waits;
//   - at rest: the requests of the next -rest (1 minute) with nothing
//     changed, against what the configured intervals allow;
//   - drift: -drift-edits (100) foreign edits of the apps' ConfigMaps spread
//     over the fleet, -drift-rate (20) a second, each timed from the patch
//     returning until a watch sees Git's value again.
//
// Before the fleets, in an environment of its own: one Kustomization of
// -single-objects (1,000) objects, timed from a pushed commit's new source
// artifact to Ready, render-controller in the loop, against the bare loop
// over the same objects.
//
// -profile-dir serves pprof from each controller (--pprof-addr) and writes
// CPU profiles of render-, sync- and source-controller and kube-apiserver
// during the largest N's sync and heap profiles after it, and the same
// during that N's floor (files named floor-nN), so that what the fleet's
// API server does beyond the floor's can be told apart.
//
// -control-plane-cpus 0 runs kube-apiserver, etcd and kube-controller-
// manager on CPU 0 and everything else — the controllers with their
// render workers, this bench with its NATS and Git server, and whatever
// else it started — on the other CPUs, floor included, pinned with
// sched_setaffinity on every thread (benchkit.PinTree): production runs the control plane on machines of its
// own, where a controller's CPU does not slow the API server's answers. On
// a machine of two cores that share everything the fleet's time is the CPU
// of all its processes over two cores, whoever spends it
// (docs/bench/fleet.md, "Fleet runs T3–T7"); pinned, it is the API server's
// own work beside the floor's.
//
// -shards 1,3 runs each N once per shard count, each in a fresh
// environment: with S > 1, localenv starts S shards of the four
// controllers beside the main instance, and the Kustomizations and
// GitRepositories are labelled sharding.plumb.dev/key=shard1 … round-robin.
// A table puts the runs of one N side by side: time to all Ready and
// throughput in all and per shard, the requests of each shard's
// controllers, and memory and CPU per process.
//
// -ha runs, instead of the fleets, a takeover (ha.go): render- and
// sync-controller each a leader and a standby with a short Lease; one
// Kustomization in -ha-hook-every (10) has a PostSync hook, a Job that
// runs two seconds; once -ha-kill-after (a third) of the Kustomizations
// are Ready, sync-controller's leader is ended with SIGKILL (-ha-signal)
// right after a hook is created. It reports the time from the kill until
// another process holds the Lease, until the first Ready after that and
// until all are Ready; and from a watch of the apps' objects started
// before the fleet, the objects written again after their creation, the
// objects missing, the Kustomizations without their four inventory entries
// and the hooks created more than once.
//
// It is a benchmark, not a test: nothing here asserts a duration, and it
// is not part of `make test`.
package main
