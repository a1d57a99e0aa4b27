// Package argocd reads the argocd.argoproj.io/* annotations that
// repositories written for Argo CD carry, and says what each asks of a
// sync in Plumb's terms, so that such a repository runs unchanged.
//
// Every reader here is pure and reads an object's annotations only. The
// places that decide (pkg/plan for hooks and waves, pkg/manage for what a
// prune keeps, sync-controller's engine for how an object is written)
// call it next to their reading of Plumb's own plumb.dev/* annotation,
// which wins when both are set. Conflicts lists the pairs that disagree,
// so a Kustomization's status can say which annotation was not followed.
//
// The values are read as Argo CD reads them, leniencies included: a hook
// type or delete policy it does not know is left out, a sync wave that is
// not an integer is 0 (or the Helm hook weight), and a sync option is
// one "Name=value" item of a comma list, compared exactly after trimming.
// docs/design/argocd.md has the table of every annotation and option and
// what Plumb does with it.
//
// Plumb keeps this reader of its own rather than importing Argo CD's
// gitops-engine: the engine's hook and sync-option helpers come with its
// whole sync machinery and client-go pins of their own, for a dozen lines
// of annotation parsing.
package argocd
