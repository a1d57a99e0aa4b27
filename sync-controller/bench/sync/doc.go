// Command syncbench measures sync-controller against the real envtest control
// plane (pkg/testenv) and prints a table with the speed targets of docs/design/sync-engine.md:
//
//   - initial sync to Ready of one Kustomization of N generated objects (a
//     mix of ConfigMaps, headless Services and Deployments, and N ConfigMaps),
//     against a bare client loop doing the same server-side applies (field
//     manager, force) with the same concurrency as --apply-concurrency, each
//     on a fresh namespace, the two sides alternating run by run;
//   - the same initial sync of the mixed objects with a real render in the
//     loop, for each of -shapes (issue 46): "targetNamespace" (the objects
//     in Git name no namespace) and "images-patch" (an image and a JSON
//     6902 patch of every ConfigMap); the stand-in render builds a tree of
//     one object per file with pkg/render under the shape's spec, and the
//     clock runs from the start of that build to Ready, against the bare
//     loop applying what the same build renders for its own namespace;
//   - no-op resync time and API request count, triggered with the
//     reconcile.plumb.dev/requestedAt annotation and measured until
//     status.lastHandledReconcileAt equals the token;
//   - drift-to-correction latency over foreign edits (a Deployment's
//     spec.replicas or a ConfigMap's data patched by another field manager),
//     from the patch returning until a watch sees the value reverted;
//     then edits in a second control plane that a Kustomization targets
//     through spec.kubeConfig (-remote-drift), alternating five at a time
//     with edits of the local Kustomization, the remote median held to the
//     local one's under the same load;
//   - a fight: another field manager writing a Deployment's spec.replicas
//     (which Git sets) -fight-rate times a second for -fight-duration, with
//     one foreign edit of a ConfigMap half-way through, twice — with fight
//     detection off (the baseline) and with --drift-fight-window — each
//     against an in-process controller of its own: the writer's writes,
//     sync-controller's writes and dry-runs of the Deployment, and the
//     events (alerts) per minute; -fight-only runs only this;
//   - peak memory (VmHWM) of the built sync-controller binary running as its
//     own process through the same initial sync, resyncs and drift edits.
//
// Timings and request counts come from sync-controller running in this
// process, wired like main.go (same manager, watcher, engine, recorder and
// NATS publisher, same defaults) but with a counting transport on its
// rest.Config; the memory figure comes from the real binary. A stand-in
// artifact server plays render-controller: it serves the manifests and
// server-side-applies status.renderedArtifact and the Rendered condition
// under the field manager plumb-render.
//
//	go run ./sync-controller/bench/sync [-objects 1000] [-runs 5] [-profile-dir DIR]
//
// -profile-dir writes CPU profiles of the in-process controller during an
// initial sync, the no-op resyncs and the drift edits, heap profiles on
// both sides of that initial sync (pprof -base of the two is what it
// allocated), and a heap profile after the drift edits; SYNCBENCH_TRACE=1 prints every request of the final deletion
// (prune) with its start offset and duration.
//
// It is a benchmark, not a test: nothing here asserts a duration.
package main
