// Package flux reads the kustomize.toolkit.fluxcd.io/* and
// helm.toolkit.fluxcd.io/* metadata that repositories written for Flux
// carry on the objects they hold, and says what each asks of a sync in
// Plumb's terms, so that such a repository keeps under Plumb what Flux
// would keep.
//
// It is the sibling of pkg/argocd and follows its model: every reader is
// pure and reads an object's labels and annotations only; the places that
// decide (pkg/manage for what a prune keeps, sync-controller's engine for
// whether and how an object is written, pkg/render for substitution) call
// it after their reading of Plumb's own annotation, which wins when both
// are set; Conflicts lists the pairs that disagree, so a Kustomization's
// status.sync.warnings can say which one was not followed.
//
// The values are read as Flux reads them: a key counts as a label or as an
// annotation, and its value is compared without regard to case
// ("Disabled" and "disabled" are the same), an empty value being no value.
// docs/design/flux.md has the table of every key and what Plumb does with
// it.
//
// Plumb keeps this reader of its own rather than importing fluxcd/pkg/ssa:
// there the keys are selectors handed to Flux's apply and delete loops,
// which Plumb does not use, for a few lines of metadata matching.
package flux
