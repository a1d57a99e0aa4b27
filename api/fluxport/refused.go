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
}

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
