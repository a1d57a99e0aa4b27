package v2

// Condition and event reasons render-controller sets on a HelmRelease
// (docs/api/helmrelease.md lists them). The Rendered condition, its
// RenderSucceeded reason and the Rendered event are shared with
// Kustomization (api/kustomize/v1), as are the reasons of a failed render.
const (
	// HelmChartFailedReason: the HelmChart of spec.chart could not be
	// created, updated or deleted, or a HelmChart of that name exists that
	// this HelmRelease does not own.
	HelmChartFailedReason = "HelmChartFailed"
	// ValuesFailedReason: spec.valuesFrom or spec.values could not be
	// resolved: a ConfigMap, Secret or key that is missing and not
	// optional, values that are not valid YAML, a targetPath that cannot be
	// set, or values over render-controller's size limits.
	ValuesFailedReason = "ValuesFailed"
)
