// Package helmrender renders a packaged Helm chart into the same artifact
// as a Kustomization's render: the render step of render-controller for a
// HelmRelease, with no API server, no network, and bounded size and time.
//
// # Steps of Render
//
//  1. Limits first, on what was given: the values (as canonical JSON), the
//     archive, and its decompressed size, read from the tar headers before
//     the SDK's loader holds any file (the loader's own limit,
//     archive.MaxDecompressedChartSize, is a process-wide variable Plumb
//     leaves at Helm's 100 MiB, so a per-render limit is checked here).
//  2. What `helm template` does, step by step with the SDK's own functions
//     and in its order (action.Install.RunWithContext in client-only
//     dry-run mode and action.Configuration.renderResources):
//     loader.LoadArchive; chartutil.ProcessDependencies (conditions, tags,
//     import-values); ToRenderValues (the user values coalesced over the
//     chart's values, .Release with IsInstall or IsUpgrade and Options.Revision,
//     .Capabilities from Options); the values.schema.json check (unless
//     Options.DisableSchemaValidation); the
//     chart's kubeVersion against the Kubernetes version; engine.Engine
//     with DNS off and no client (so lookup finds nothing); NOTES.txt
//     dropped (the top chart's kept for the record); the output split into documents as releaseutil.SortManifests
//     splits it (split.go: partials skipped, releaseutil.SplitManifests on
//     each file). Hooks stay in the output as `helm template` prints them,
//     with every helm.sh/hook* annotation (test hooks too; sync-controller
//     maps hooks onto its phases and never runs test hooks); a hook of an
//     event Helm does not know is left out, as SortManifests leaves it out.
//  3. Each document is parsed within pkg/render's node and document
//     budgets (aliases counted expanded, before anything expands them),
//     every template's output on its own CPU (render.Budget.ParseAll), and
//     checked for apiVersion, kind and a name or generateName; a document
//     that is not YAML or not an object is refused naming its template.
//  4. Post-renderers, in order: kustomize patches (strategic merge and JSON
//     6902, with targets) and images, by render.PostRender (krusty on an
//     in-memory filesystem holding only the objects, plugins off). They
//     change the templates' objects, hooks included, and not the CRDs of
//     crds/, as in Helm. Then Options.CommonMetadata's labels and
//     annotations on the same objects (Flux's commonMetadata, its last
//     post-renderer).
//  5. The CRDs of crds/ (the chart's and its subcharts') per the CRD
//     policy: Skip leaves them out; Create and CreateReplace render them,
//     every one annotated plumb.dev/prune: disabled (Helm never deletes
//     them), and with Create also plumb.dev/ssa: IfNotPresent
//     (sync-controller creates a missing one and never changes an existing
//     one).
//  6. With Options.Record (a HelmRelease's render), the release record —
//     the chart's metadata and default values, the user's values, the
//     manifest of the objects that are not hooks (each after "# Source:
//     <template>"), the hooks, the notes: Helm's release fields a chart
//     knows, gzipped JSON within MaxRecordBytes (record.go) — and then
//     Helm's ownership metadata on those objects (stampOwnership), in the
//     order Helm records and stamps a release.
//  7. render.Assemble, Build's own last step: duplicates refused, pkg/render's
//     canonical order and YAML form, the output cap.
//
// # Values
//
// Options.Values are the user's values, already merged (pkg/helmvalues
// merges a HelmRelease's valuesFrom in order and then spec.values, as the
// helm CLI merges -f files, and sets a targetPath in --set syntax).
// Render coalesces them over
// the chart's own values as Helm does (a null removes a default), and
// Result.ConfigDigest is helmv2.ConfigDigest of them.
//
// # Why the SDK's pieces rather than action.Install
//
// `helm template` is action.Install with DryRunStrategy client. Render
// calls the functions that Install calls instead of Install itself,
// because Install in client-only mode cannot be told the cluster's
// capabilities: it always starts from the SDK's built-in API versions and
// adds the given ones, so a chart would see APIs the cluster does not
// serve. Install also validates values against values.schema.json with a
// loader that reads host files and fetches URLs with an HTTP client of its
// own (schema.go has the sandboxed copy), builds a release record and an
// in-memory release store, and takes a context only for lookup. What
// Install adds on top of these functions for `helm template` — printing
// the CRDs of crds/ when asked, manifests, then hooks — Render does itself.
//
// Two steps of renderResources are Render's own code, for the sandbox and
// for time: the schema check (above), and the split of the templates'
// output, where SortManifests would convert every document from YAML to
// JSON only to read its head, a pass that costs about 6% of a large
// chart's render and that Render's own parse makes redundant (split.go).
// TestGoldenHelmTemplate compares the result with the SDK's own `helm
// template` path object for object, on the test chart and on the
// benchmark's chart.
//
// # Six template functions of Plumb's own
//
// The engine runs with six functions replaced through its
// CustomTemplateFuncs: toYaml, mustToYaml, fromYaml and fromYamlArray,
// which in the SDK convert through JSON and back (sigs.k8s.io/yaml), and
// sprig's deepCopy and mustDeepCopy (copystructure's reflective walk).
// Charts call them for every component, and they were half of a large
// chart's render (docs/bench/helm.md). Plumb's versions give the same
// results for the plain values they take and hand everything else to the
// SDK's own function (funcs.go says exactly what they take and why the
// SDK's libraries alone cannot do it faster: the round trip is their
// contract); funcs_test.go holds them to the SDK's.
//
// # The sandbox
//
// A chart is hostile input (docs/design/render-sandbox.md, section
// "Helm charts"). The engine reaches no network (no client for lookup, DNS
// off, sprig's env and expandenv removed by the SDK), and no file but the
// chart's own (.Files reads the loaded archive). Schemas load nothing
// (schema.go). Sizes are bounded before and after the engine runs; time by
// ctx.
//
// The engine itself takes no budget: text/template takes no context and
// the SDK has no budget, so a template that loops (a range over `until
// 100000000`, nested ranges over values, a `tpl` or `include` that
// multiplies a string) runs as long and allocates as much as it likes
// between the limits Render checks before and after it. Render runs the
// SDK in a goroutine and returns LimitExceeded as soon as ctx ends, but
// cannot stop it. That is why render-controller and the plumb command line
// call Render only in a render worker (pkg/renderworker), a process with a
// memory and stack limit of its own that is killed at the deadline.
package helmrender
