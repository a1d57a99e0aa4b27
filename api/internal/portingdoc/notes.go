package main

// notes say why where the table's yes or refused is not the whole story,
// by "Kind" (a kind Plumb lacks) or "Kind.part.field".
var notes = map[string]string{
	"Kustomization.status.inventory":             "Flux's shape: `entries[]` of `id` (`<namespace>_<name>_<group>_<kind>`) and `v`",
	"HelmRelease.status.inventory":               "Flux's shape, as a Kustomization's; hooks are not in it, as in Flux",
	"HelmRelease.spec.rollback":                  "`timeout`, `disableWait`, `disableHooks` and `force`",
	"HelmRelease.spec.uninstall":                 "every field; `keepHistory` keeps `status.history` (entries marked `uninstalled`) after an uninstall remediation",
	"HelmRelease.status.lastAttemptedGeneration": "with Plumb's `lastAttemptedDigest` (the render attempted), it says which attempt the failure counters count",
	"HelmRelease.status.storageNamespace":        "where sync-controller wrote the release records in Helm's format: `flux tree` reads the newest one's manifest, as for Flux's",
	"HelmRelease.spec.install":                   "`timeout`, `crds`, `createNamespace`, `disableHooks`, `disableWait`, `disableWaitForJobs`, `disableSchemaValidation` and `disableTakeOwnership` as in Flux (docs/design/helm.md)",
	"HelmRelease.spec.upgrade":                   "`timeout`, `crds`, `disableHooks`, `disableWait`, `disableWaitForJobs`, `disableSchemaValidation`, `disableTakeOwnership`, `force` (delete and recreate what cannot change in place) and `cleanupOnFail` as in Flux (docs/design/helm.md)",
	"HelmRelease.spec.test":                      "`enable`, `ignoreFailures`, `filters` and `timeout` as in Flux; the results in `status.history[].testHooks` and the `TestSuccess` condition",
}
