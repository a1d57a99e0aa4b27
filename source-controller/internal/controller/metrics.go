package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/metrics"
)

// NewMetrics creates source-controller's Prometheus metrics (pkg/metrics'
// set, the package doc lists their names) and registers them with reg
// (controller-runtime's metrics.Registry in the binary, so /metrics serves them).
// Each source kind also reports Flux's gotk_* series, kind="GitRepository",
// "HelmRepository", "HelmChart", "OCIRepository", "Bucket".
func NewMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source", Kind: sourcev1.GitRepositoryKind, Condition: meta.ReadyCondition, Toolkit: true,
		Work:     "fetches_total",
		WorkHelp: "Fetches (clones) from the remote; a reconcile whose remote head is unchanged fetches nothing.",
	})
}

// NewHelmRepositoryMetrics creates the HelmRepository metrics,
// plumb_source_helmrepository_*, and registers them with reg.
func NewHelmRepositoryMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source_helmrepository", Kind: sourcev1.HelmRepositoryKind, Condition: meta.ReadyCondition, Toolkit: true,
	})
}

// NewHelmChartMetrics creates the HelmChart metrics, plumb_source_helmchart_*,
// and registers them with reg.
func NewHelmChartMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source_helmchart", Kind: sourcev1.HelmChartKind, Condition: meta.ReadyCondition, Toolkit: true,
	})
}

// NewOCIRepositoryMetrics creates the OCIRepository metrics,
// plumb_source_ocirepository_*, and registers them with reg.
func NewOCIRepositoryMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source_ocirepository", Kind: sourcev1.OCIRepositoryKind, Condition: meta.ReadyCondition, Toolkit: true,
		Work:     "pulls_total",
		WorkHelp: "Layer pulls from the registry; a reconcile whose reference resolves to the stored revision pulls nothing.",
	})
}

// NewBucketMetrics creates the Bucket metrics, plumb_source_bucket_*, and
// registers them with reg.
func NewBucketMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source_bucket", Kind: sourcev1.BucketKind, Condition: meta.ReadyCondition, Toolkit: true,
		Work:     "fetches_total",
		WorkHelp: "Downloads of a bucket's objects; a listing whose revision is the stored artifact's downloads nothing.",
	})
}

// NewArtifactGeneratorMetrics creates the ArtifactGenerator metrics,
// plumb_source_artifactgenerator_*, and registers them with reg.
func NewArtifactGeneratorMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source_artifactgenerator", Kind: sourceextv1beta1.ArtifactGeneratorKind, Condition: meta.ReadyCondition,
	})
}
