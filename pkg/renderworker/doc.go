// Package renderworker runs renders — kustomize builds (render.Build),
// Helm chart renders (helmrender.Render) and source-controller's HelmChart
// plans and packages (pkg/helmpackage), and renders by config-management
// plugins (Plugin: the exchange with the plugin's socket, pkg/renderplugin,
// and the parsing and checks of its YAML) — in worker processes with hard
// limits, so that a hostile input costs its own render and nothing else.
//
// A render is the one place where a tenant's input runs as code: Go's
// template engine and kustomize take no budget and no context, so a
// template that loops for ever or doubles a string until memory runs out
// cannot be stopped inside the process that runs it. In a worker it can:
// the worker has its own memory limit, and the parent kills it at the
// render's deadline.
//
// # The pool
//
// A Pool runs at most Options.Workers renders at once (render-controller's
// --render-workers, 2 by default), each in a worker process; a render
// waits for a free worker within its own deadline. It keeps as many
// workers as its queue needs: one, started in the background so the first
// render finds it ready; another (up to Workers) once a render has waited
// a second for a busy one, started in the background while the render
// takes whichever worker frees first; and it stops a worker beyond the
// first once it has been idle for 30 s. A worker is the whole program with
// a heap of its own, so a second one that a burst of small Helm renders
// does not need is memory for nothing (docs/design/render-sandbox.md,
// "Render workers", has the numbers). A worker is this same program
// started again (os.Executable) with nothing of the parent's environment
// but the worker's settings, and main calls ServeIfWorker first thing. A
// worker is reused for the next render when it answered, and replaced when
// it failed (in the background when the pool would otherwise have none),
// and after 1,000 renders.
//
// # Limits
//
// Set by the worker on itself before it reads any request (limits_linux.go):
//
//	limit            how                                         default
//	memory           RLIMIT_AS: the address space mapped once    768 MiB (--render-worker-memory)
//	                 started, plus the budget
//	CPU time         soft RLIMIT_CPU per render: what the        the render's time limit
//	                 worker used so far plus the render's time   (--render-timeout)
//	open files       RLIMIT_NOFILE                               64
//	files written    RLIMIT_FSIZE: Options.MaxFileBytes          0 (chart workers: the package)
//	core dumps       RLIMIT_CORE 0                               0
//	privileges       PR_SET_NO_NEW_PRIVS                         on
//	stack            debug.SetMaxStack                           64 MiB
//	thread stacks    RLIMIT_STACK, MALLOC_ARENA_MAX=1: a cgo     512 KiB, one arena
//	                 build's worker starts itself again
//	network          render.LockDownProcess, as render-controller
//
// Why RLIMIT_AS and not a cgroup: a cgroup of its own needs a delegated,
// writable cgroup folder, which a Pod's container does not have unless the
// node is configured for it, while an rlimit needs no privilege and holds
// on every Linux. Go maps about a gigabyte of address space when it starts
// that it never touches, so the limit is that plus the budget; past it,
// every heap growth maps as much address space as it adds memory, so the
// budget bounds the render's memory to within a few MiB (measured: a
// worker with a 512 MiB budget failed at 495 MiB of live heap, 463 MiB
// resident). The container's own memory limit still bounds the sum of
// render-controller and its workers: deploy/README.md sizes it.
//
// The parent kills the worker at the render's deadline (context), so
// nothing runs on after a timeout; the worker's own deadline is a second
// later, and a worker whose render it abandoned all the same says so and
// exits. The CPU limit backs the deadline for a render that burns more
// than one core.
//
// # Chart workers
//
// source-controller runs a pool of its own (--chart-workers,
// --chart-worker-memory) for HelmCharts: ChartPlan loads a chart (a folder
// of a source tree the worker reads from disk, or an archive) and lists
// the remote dependencies it still needs; the parent downloads their
// archives, as bytes it never loads; ChartPackage loads everything again,
// adds the archives, merges the values files and packages. Nothing of a
// chart's content is parsed in the parent, where YAML crafted to cost
// some 130 times its size would take the controller down for every
// tenant. chartutil.Save writes the package to a file, so such a pool's
// workers may write one file of at most Options.MaxFileBytes
// (RLIMIT_FSIZE, set at start like every limit; past it the kernel
// refuses the write and the request fails with LimitExceeded): the pool
// makes a folder for each package request and removes it after the
// answer, which carries the package's bytes. A render pool keeps
// MaxFileBytes at 0. Options.Names put a pool's failures in its
// program's words: "packaging the chart passed its memory limit of
// 768 MiB (--chart-worker-memory); its chart worker was stopped".
//
// # Other systems
//
// Outside Linux (the plumb command line on a Mac) a worker sets no rlimit:
// it is bounded by the deadline, at which the parent kills it, and by the
// render's own budgets (bytes read, YAML nodes, output), not by a memory
// limit.
//
// # The protocol
//
// Requests go to the worker's file descriptor 3 and answers come back on
// 4; its standard output and error are the parent's record of how it died
// (the first and last 8 KiB), never the protocol, so a library's stray
// print cannot break it. A message is a JSON header and a blob, each a
// frame of a 4-byte length and the bytes: a request holds the render's
// arguments (for a kustomize build the work folder's path — the worker
// reads the shared source tree from disk — the spec, the variables and
// the decryption Secret's data; for Helm the options and the values as
// JSON, with the chart archive as the blob), an answer the object ids, the
// digest and the render's error, with the manifests as the blob. Each side
// bounds what it reads (an answer by the render's output limit), and
// unknown header fields are refused. A chart request's blob is the chart
// archive (none for a folder) then each pulled dependency's, their
// lengths in the header; the worker refuses lengths that do not add up
// to the blob, and a plan's answer carries no blob.
//
// # What a failure looks like
//
// The render's own failure crosses as the *render.Error it was (reason and
// message, redacted by the render). A worker that did not answer gives a
// *render.Error of reason LimitExceeded naming the limit:
//
//	rendering did not finish within its time limit of 2m0s (--render-timeout); its render worker was stopped
//	rendering passed its memory limit of 768 MiB (--render-worker-memory); its render worker was stopped
//	rendering used more CPU time than its limit of 2m0s (--render-timeout); its render worker was stopped
//	rendering passed its stack limit of 64 MiB: a template, value or Jsonnet function that recurses without end …
//	the rendered manifests pass the limit of … bytes (--max-rendered-size); …
//	the render worker answered with a broken message (…); its render worker was stopped
//	the render worker exited (exit status 2) before it answered
//
// The classification reads only the Go runtime's fixed messages in the
// worker's output; nothing the worker printed reaches a status, an event
// or a log line, since a panic's text may quote the render's data.
//
// # What a worker keeps between renders
//
// Nothing of one render reaches the next: the decryption keys, values,
// chart and results live in one request's handling, and a worker idle for
// two seconds hands its heap back to the system. The one thing kept is
// kustomize's output for trees that never change (render.SharedBuilds,
// only for requests that allow it and never with decryption keys), keyed
// by everything that decides that output, so it gives any render exactly
// what its own build would.
package renderworker
