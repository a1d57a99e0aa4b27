// Package render turns a source tree and a Kustomization spec into one
// multi-document YAML stream: the build step of render-controller, with no
// API server, no network, and bounded memory and time.
//
// # Steps of Build
//
//  1. The build reads the source tree in SourceDir(workDir) and writes
//     nothing there: the overlay (beside the source folder) and a generated
//     kustomization exist only in the build's sandboxFS, so one extracted
//     tree serves every build of its revision at once (render-controller
//     shares it). kustomize sees the folder only through sandboxFS (see
//     "The sandbox" below).
//  2. When spec.path holds no kustomization.yaml, kustomization.yml or
//     Kustomization, one is generated listing every YAML/JSON file below
//     the path that holds objects, and every sub-folder that has its own
//     kustomization file. Files that do not parse are refused naming the
//     file; files without any apiVersion or kind are skipped; two documents
//     naming the same object are refused naming both files; a folder
//     reached again through links is refused. The .jsonnet files directly
//     in such a path are evaluated first (jsonnet.go, with spec.jsonnet's
//     variables, arguments and library folders) and listed as files
//     holding the objects they produce.
//  3. An overlay kustomization referencing the user's folder carries the
//     spec's targetNamespace, namePrefix, nameSuffix, patches (strategic
//     merge or JSON 6902, with targets), images and components (relative
//     to spec.path), as Flux does. krusty builds it with
//     LoadRestrictionsRootOnly and plugins disabled (no exec, container or
//     Helm plugins; the Makefile and make images build without
//     kustomize's Go-plugin loader, tag kustomize_disable_go_plugin_support,
//     which TestTheBuildsLeaveOutGoPlugins keeps sufficient), in a
//     goroutine the build abandons when its context ends
//     (render-controller builds in a render worker, pkg/renderworker,
//     which is killed at the deadline, so nothing runs on).
//  4. spec.commonMetadata labels and annotations are set on each object's
//     metadata only (never selectors or pod templates), like Flux.
//  5. postBuild substitution, only when spec.postBuild is set (as in Flux),
//     on each object's YAML, except objects annotated or labelled
//     kustomize.plumb.dev/substitute: disabled.
//  6. Each object must have apiVersion, kind and metadata.name; two objects
//     with the same group, kind, namespace and name (an empty namespace
//     counting as "default", the version not counting) are refused naming
//     both. Objects are sorted into a canonical order: the kind order in
//     which a sync wave applies them (pkg/object: Namespace first, CRDs
//     after ConfigMaps and storage, unlisted kinds last), then kind,
//     group, namespace, name, version. Each document is
//     kustomize's YAML form (sorted keys), so the same input gives the same
//     bytes and the same sha256 digest. The output is capped. Steps 4, 5
//     and the printing are each object's own, and without a decryptor run
//     on every core (finishAll), with the loop's outcome: the same objects
//     in the same order, or the first failing object's error.
//
// # The fast path
//
// Step 3 is skipped for the commonest Kustomization of all: spec.path is a
// folder whose kustomization lists only files — the one generated for a
// folder without a kustomization file, or the user's own when kustomize
// would read it as it reads a generated one (resources and no other
// field) — the spec has no components, buildMetadata or decryption (its
// targetNamespace, patches, namePrefix, nameSuffix and images the fast
// path does with kustomize's own transformers, fastoverlay.go), and every
// object is of a kind the fast path takes (ConfigMap, Secret, Service,
// ServiceAccount, Namespace, and the workloads: Pod, ReplicationController,
// Deployment, DaemonSet, ReplicaSet, StatefulSet, Job, CronJob; no
// annotation of kustomize's own but local-config) and kustomize's
// name-reference step would leave it as it is (names that no build
// without a prefix or suffix changes; nameReferences). Why: krusty's duplicate check compares each object with
// every object before it, most of a 1,000-object build, while
// there is nothing for kustomize to change. The fast path (fastpath.go)
// reads the same files through the same sandbox in krusty's order, parses
// them with kustomize's own resource factory (List expansion, empty
// documents, the checks of each object), refuses duplicates with a map
// keyed as kustomize compares ids, drops local configuration and removes
// kustomize's build, origin and transformer annotations with kustomize's
// own methods. Its output must equal krusty's, because the digest of the
// manifests is what the sync and the artifact cache key on: a build that
// changed bytes when the fast path took it would look like a new revision.
// On any error or anything it is not sure of it gives up, rewinds the
// sandbox's budgets, and krusty runs as before, so every refusal and
// message stays kustomize's. TestFastPathEqualsKustomize and FuzzFastPath
// compare the two on the same inputs.
//
// Why code of our own rather than kustomize's: kustomize offers no API to
// build a folder without its accumulator (the quadratic part), and its
// name-reference configuration is internal; the fast path therefore uses
// kustomize's public factory and methods for everything it does to an
// object, and keeps to itself only the decision of when kustomize would
// do nothing more, checked against kustomize's own configuration by
// TestFastKindReferrerPathsAreKustomizes (docs/design/render-fast-path.md).
//
// # The sandbox
//
// The source is hostile input (docs/design/render-sandbox.md). Every file
// kustomize reads goes through sandboxFS, which wraps Flux's secure on-disk
// filesystem (fluxcd/pkg/kustomize/filesys: paths confined to the work
// folder with links resolved; kept rather than written anew because it is
// the check Flux's own kustomize-controller relies on) and adds:
//
//   - no writes and no file handles; the files Build adds (the overlay, a
//     generated kustomization) are in memory, seen at their paths;
//   - a deadline: every call fails once the build's context is done;
//   - budgets (Limits): bytes read, and the YAML nodes and documents of
//     every file read, counted on a parse that keeps aliases as references,
//     so an alias bomb is refused by arithmetic before kustomize, which
//     expands every alias, ever reads it;
//   - the remote check: every kustomization (at any depth, with the YAML
//     written inline in it) and every builtin generator or transformer
//     config is refused when a field kustomize loads from names a URL or a
//     Git address. kustomize has no switch against fetching, so the check
//     sits where kustomize reads, and nothing is fetched before it. It
//     decodes with kustomize's own types and decoder, since kustomize
//     matches field names in any case and keeps the last of duplicate
//     keys: a parser of our own would see a different file.
//
// LockDownProcess is the defence in depth for a rendering process: the
// default HTTP transport and git refuse everything.
//
// Why a filesystem of its own: kustomize's loader takes only a
// filesys.FileSystem, which is the one place every read passes; an
// in-memory copy of the tree (the earlier design) held every file whether
// the build needed it or not, and a directory link repeated many times
// multiplied it.
//
// # Substitution
//
// ${name} takes the variable's value; ${name:=default} and ${name:-default}
// take default when the variable is unset or empty; $${name} is the escape
// and leaves the literal text ${name}. $name without braces and a lone $ are
// left alone. A "${" that does not start a well-formed reference is an
// error, as in Flux. Variable names follow Flux's rule
// ^[_[:alpha:]][_[:alpha:][:digit:]]*$.
//
// An undefined variable without a default becomes the empty string, as in
// Flux (so Flux manifests port unchanged); with Options.StrictSubstitution
// it is an error naming the variable instead (Flux's
// StrictPostBuildSubstitutions feature gate). render-controller exposes it
// as --strict-substitution.
//
// Values from Secrets are marked Variable.Secret: error messages name
// variables and objects, never values, and a YAML error after substitution
// has secret values redacted.
//
// # Other renderers
//
// pkg/helmrender renders Helm charts into the same artifact with Build's
// own steps, exported in external.go: Budget (the node and document
// budgets over every stream a render parses, concurrently with ParseAll),
// PostRender (the spec's patches and images by krusty on an in-memory
// filesystem) and Assemble (the checks, canonical order and YAML form and
// output cap of step 6). The canonical YAML form is JSONToYAML of the
// object's JSON, computed by canonical.go at a fraction of
// sigs.k8s.io/yaml's cost with the same bytes.
//
// # Errors
//
// Every failure is an *Error whose Reason is the Rendered condition reason:
// BuildFailed (kustomize, invalid YAML, missing path, a link leaving the
// source), RemoteResourceRefused, LimitExceeded, SubstituteFailed,
// ValidationFailed or DecryptionFailed.
//
// # Decryption
//
// With Options.Decryptor (spec.decryption; pkg/decrypt implements the
// interface, which keeps the SOPS library out of this package), sandboxFS
// notes, in every kustomization it reads, the files of its secretGenerator
// and configMapGenerator entries and its patches[].path, and hands
// kustomize their plaintext when they are SOPS-encrypted; objects with a
// sops block, and Secret data values that are SOPS files, are decrypted
// after kustomize and substitution, as Flux does (decrypt.go,
// pkg/decrypt). The plaintext is counted in the byte budget and never
// written; a build error has every decrypted value redacted.
package render
