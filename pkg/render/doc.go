// Package render turns a source tree and a Kustomization spec into one
// multi-document YAML stream: the pure build step of render-controller,
// with no API server and no network.
//
// # Steps of Build
//
//  1. The source tree is copied into an in-memory filesystem (links are
//     followed only inside the tree, .git is left out), so kustomize can
//     neither read outside the source nor write anywhere.
//  2. When spec.path holds no kustomization.yaml, kustomization.yml or
//     Kustomization, one is generated listing every YAML/JSON file below
//     the path that holds objects, and every sub-folder that has its own
//     kustomization file. Files that do not parse are refused naming the
//     file; files without any apiVersion or kind are skipped; two documents
//     naming the same object are refused naming both files.
//  3. Every kustomization reachable from the entry point is read and any
//     remote reference (http(s) or Git URL, go-getter git::, github.com/…,
//     user@host:path) is refused: krusty has no switch against fetching.
//  4. An overlay kustomization referencing the user's folder carries the
//     spec's targetNamespace, namePrefix, nameSuffix, patches (strategic
//     merge or JSON 6902, with targets), images and components (relative
//     to spec.path), as Flux does. krusty builds it with
//     LoadRestrictionsRootOnly and plugins disabled (no exec, container or
//     Helm plugins).
//  5. spec.commonMetadata labels and annotations are set on each object's
//     metadata only (never selectors or pod templates), like Flux.
//  6. postBuild substitution, only when spec.postBuild is set (as in Flux),
//     on each object's YAML, except objects annotated or labelled
//     kustomize.plumb.dev/substitute: disabled.
//  7. Each object must have apiVersion, kind and metadata.name; two objects
//     with the same group, kind, namespace and name (an empty namespace
//     counting as "default", the version not counting) are refused naming
//     both. Objects are sorted into a canonical order: a fixed kind order
//     (Namespace and CRDs first, webhooks last, unknown kinds between),
//     then kind, group, namespace, name, version. Each document is
//     kustomize's YAML form (sorted keys), so the same input gives the same
//     bytes and the same sha256 digest.
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
// # Errors
//
// Every failure is an *Error whose Reason is the Rendered condition reason:
// BuildFailed (kustomize, invalid YAML, missing path, remote reference),
// SubstituteFailed or ValidationFailed.
package render
