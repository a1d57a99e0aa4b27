// Package argoconvert turns Argo CD's Application, ApplicationSet and
// AppProject manifests into Plumb objects: the work behind
// `plumb convert argocd`.
//
// An Application becomes a source (GitRepository, HelmRepository or
// OCIRepository) and a Kustomization or a HelmRelease; an ApplicationSet
// an ObjectSet whose template is its Application template converted the
// same way, with Argo CD's template syntax turned into Go templates; an
// AppProject the ServiceAccount its Applications' Kustomizations
// impersonate, with RBAC for its destinations and resource lists.
//
// Nothing is dropped without a word: every field of the input is either
// converted, or named in a note that heads the output of that object
// ("spec.source.helm.kubeVersion: not converted …"). An input that cannot
// be converted at all (a config management plugin, a generator with no
// Plumb equivalent left) gives a Result with Err set and no objects.
//
// Inputs are hostile like everything Plumb reads: Convert bounds the
// size of the YAML it is given after alias expansion, and names the
// document and the field of every refusal. docs/design/argocd.md,
// "Converting Argo CD's objects", is the user's description of each
// mapping and of the choices made where Argo CD says less than Plumb
// needs (a Git revision that may be a branch or a tag, HEAD).
package argoconvert
