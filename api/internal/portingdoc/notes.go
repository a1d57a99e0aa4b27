package main

// notes say why where the table's yes or refused is not the whole story,
// by "Kind" (a kind Plumb lacks) or "Kind.part.field".
var notes = map[string]string{
	"Kustomization.status.inventory":      "Flux's shape: `entries[]` of `id` (`<namespace>_<name>_<group>_<kind>`) and `v`",
	"HelmRelease.status.inventory":        "Flux's shape, as a Kustomization's; hooks are not in it, as in Flux",
	"HelmRelease.status.storageNamespace": "where sync-controller wrote the release records in Helm's format: `flux tree` reads the newest one's manifest, as for Flux's",
}
