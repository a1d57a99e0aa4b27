package fluxport

import (
	"regexp"
	"strings"
)

// Why workload identity is refused, shared by every kind that has it.
const (
	workloadIdentity = "Flux exchanges the ServiceAccount's token for a cloud provider's credentials (workload identity); " +
		"Plumb implements no cloud workload identity: authenticate with secretRef"
	registryLogin = "cloud registry login (aws, azure, gcp) by workload identity is not implemented: " +
		"use secretRef with a kubernetes.io/dockerconfigjson Secret"
	deprecatedInterval = "deprecated in Flux, whose controllers no longer read it: " +
		"a %s has nothing to reconcile on a timer; delete the field"
)

// refused maps "Kind.spec.field" to why Plumb's CRD lacks the field.
var refused = map[string]string{
	"Bucket.spec.serviceAccountName":        workloadIdentity,
	"GitRepository.spec.serviceAccountName": workloadIdentity,
	"OCIRepository.spec.serviceAccountName": workloadIdentity,
	"OCIRepository.spec.provider":           registryLogin,
	"HelmRepository.spec.provider":          registryLogin,
	"HelmRepository.spec.accessFrom": "deprecated in Flux, whose controllers never read it: " +
		"cross-namespace references are governed by the controllers' --no-cross-namespace-refs",
	"Provider.spec.serviceAccountName": workloadIdentity,
	"Provider.spec.proxy":              "deprecated in Flux for proxySecretRef, which Plumb reads: put the proxy's address in a Secret",
	"Provider.spec.interval":           strings.Replace(deprecatedInterval, "%s", "Provider", 1),
	"Receiver.spec.interval":           strings.Replace(deprecatedInterval, "%s", "Receiver", 1),

	"OCIRepository.spec.verify.matchOIDCIdentity": keyless,
	"HelmChart.spec.verify.matchOIDCIdentity":     keyless,

	"ImageRepository.spec.serviceAccountName": "Flux reads the image pull secrets of a ServiceAccount, or exchanges its token for a cloud provider's " +
		"credentials; image-controller reads no ServiceAccount: name the kubernetes.io/dockerconfigjson Secret in secretRef",
	"ImageRepository.spec.provider": registryLogin,
	"ImageRepository.spec.accessFrom": "Plumb implements no namespace ACL of Flux's (acl.AccessFrom): an ImagePolicy names an ImageRepository " +
		"in another namespace unless image-controller runs with --no-cross-namespace-refs, which refuses every such reference",
	"ImageRepository.spec.proxySecretRef": "image-controller connects to registries directly (under its --allowed-private-networks address policy); " +
		"a proxy per ImageRepository is not implemented yet",
	"ImageUpdateAutomation.spec.git.checkout.ref.semver": "image-controller checks out a branch, a tag or a commit; " +
		"a semver range of tags is not resolved for an automation: name the tag, or the branch the commit goes on",
	"ImageUpdateAutomation.spec.git.checkout.ref.name": "image-controller checks out a branch, a tag or a commit; " +
		"a ref by its full name (refs/pull/...) is not implemented: use branch, tag or commit",

	"HelmRelease.spec.waitStrategy": "Plumb has one way to wait: sync-controller's health rules (kstatus's, as Flux's `poller`, with `healthCheckExprs`), " +
		"bounded by `spec.timeout`; Helm 3's `legacy` wait has no counterpart, and naming `poller` would change nothing",
	"HelmRelease.spec.persistentClient": "Plumb keeps no Kubernetes client per release: sync-controller's clients are shared and cached " +
		"for every object it syncs, so there is nothing to make persistent",
	"HelmRelease.spec.postRenderStrategy": "Plumb post-renders as Helm 4's default, `combined`: hooks and templates in one stream, " +
		"the CRDs of `crds/` not; `nohooks` and `separate` are not implemented",
	"HelmRelease.spec.install.replace": "Plumb keeps no uninstalled release whose name an install could reuse: " +
		"an install takes over the objects it finds by server-side apply",
	"HelmRelease.spec.install.disableOpenAPIValidation": noClientValidation,
	"HelmRelease.spec.upgrade.disableOpenAPIValidation": noClientValidation,
	"HelmRelease.spec.install.skipCRDs":                 "deprecated in Flux for `crds: Skip`, which Plumb reads",
	"HelmRelease.spec.upgrade.preserveValues": "the values are Git's alone: a release's values come from the HelmRelease and its valuesFrom, " +
		"never from the release before; Helm's storage holds them as a record only",
	"HelmRelease.spec.rollback.recreate":           "deprecated in Flux, where it has no effect",
	"HelmRelease.spec.rollback.disableWaitForJobs": "Plumb's health wait has no per-kind switch for a rollback",
	"HelmRelease.spec.rollback.cleanupOnFail":      "a failed rollback deletes nothing in Plumb; the next successful sync prunes",
}

// keyless is why cosign's keyless verification is refused.
const keyless = "cosign's keyless verification trusts Sigstore's public services (Fulcio's certificates, Rekor's log), " +
	"which source-controller does not reach: verify with a public key in verify.secretRef"

// noClientValidation is why disableOpenAPIValidation is refused.
const noClientValidation = "Plumb validates no manifest on the client: the API server's validation of each apply is the only one, and no request skips it"

// Refused returns why Plumb's kind lacks Flux's field (a path from the
// object's top, "spec.serviceAccountName"), or "" when it does not say.
func Refused(kind, field string) string {
	return refused[kind+"."+field]
}

// Fields lists the fields Refused knows, as "Kind.spec.field".
func Fields() []string {
	out := make([]string, 0, len(refused))
	for k := range refused {
		out = append(out, k)
	}
	return out
}

// undeclared finds the field in the API server's refusal of an apply
// (structured-merge-diff's "field not declared in schema") or of a strict
// create or update (`unknown field "spec.x"`).
var undeclared = []*regexp.Regexp{
	regexp.MustCompile(`\.((?:spec|status)(?:\.[A-Za-z0-9_]+)+): field not declared in schema`),
	regexp.MustCompile(`unknown field "((?:spec|status)(?:\.[A-Za-z0-9_]+)+)"`),
}

// Explain returns why kind refuses the fields an API server's error
// message names, one "Flux's spec.x: reason" per field Refused knows, or
// "" when it knows none of them.
func Explain(kind, message string) string {
	var out []string
	seen := map[string]bool{}
	for _, re := range undeclared {
		for _, m := range re.FindAllStringSubmatch(message, -1) {
			field := m[1]
			if why := Refused(kind, field); why != "" && !seen[field] {
				seen[field] = true
				out = append(out, "Flux's "+field+": "+why)
			}
		}
	}
	return strings.Join(out, "; ")
}
