package main

// notes say why where the table's yes or refused is not the whole story,
// by "Kind" (a kind Plumb lacks) or "Kind.part.field".
var notes = map[string]string{
	"Kustomization.status.inventory":      "Flux's shape: `entries[]` of `id` (`<namespace>_<name>_<group>_<kind>`) and `v`",
	"HelmRelease.status.inventory":        "Flux's shape, as a Kustomization's; hooks are not in it, as in Flux",
	"HelmRelease.spec.install":            "`timeout`, `crds`, `createNamespace`, `disableHooks`, `disableWait`, `disableWaitForJobs`, `disableSchemaValidation` and `disableTakeOwnership` as in Flux (docs/design/helm.md); refused: `replace` (Plumb keeps no uninstalled release whose name an install could reuse: an install takes over the objects it finds by server-side apply), `disableOpenAPIValidation` (Plumb validates no manifest on the client: the API server's validation of each apply is the only one, and no request skips it), `skipCRDs` (use `crds: Skip`)",
	"HelmRelease.spec.upgrade":            "`timeout`, `crds`, `disableHooks`, `disableWait`, `disableWaitForJobs`, `disableSchemaValidation`, `disableTakeOwnership`, `force` (delete and recreate what cannot change in place) and `cleanupOnFail` as in Flux (docs/design/helm.md); refused: `preserveValues` (the values are Git's alone: Plumb keeps no release's values, only their digest, so none could be reused), `disableOpenAPIValidation` (as under `install`)",
	"HelmRelease.spec.test":               "`enable`, `ignoreFailures`, `filters` and `timeout` as in Flux; the results in `status.history[].testHooks` and the `TestSuccess` condition",
	"HelmRelease.status.storageNamespace": "Plumb keeps no Helm storage: `flux tree` finds no objects under a HelmRelease; `status.inventory` lists them",
}
