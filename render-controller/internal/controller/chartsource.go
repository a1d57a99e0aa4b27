package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// A HelmRelease's chart comes from a HelmChart (spec.chart, or a chartRef
// naming one) or, as in Flux, straight from the artifact of a chartRef's
// OCIRepository or ExternalArtifact: the artifact is then the chart
// itself, a .tgz (an OCIRepository with layerSelector
// application/vnd.cncf.helm.chart.content.v1.tar+gzip and operation copy)
// or a tarball of the chart's folder (operation extract), which the Helm
// SDK's loader reads alike. Everything after the wait — the download, the
// render — is the same for all three.

// chartSourceIndexKey indexes HelmReleases by the OCIRepository or
// ExternalArtifact of their chartRef, "<kind>/<namespace>/<name>" (a
// HelmChart is helmChartIndexKey's).
const chartSourceIndexKey = ".chartSource"

// artifactChartKinds are the chartRef kinds whose artifact is the chart.
var artifactChartKinds = []string{sourcev1.OCIRepositoryKind, sourcev1.ExternalArtifactKind}

// chartSourceIndexValues indexes a HelmRelease by the OCIRepository or
// ExternalArtifact its chartRef names; none for a HelmChart.
func chartSourceIndexValues(o client.Object) []string {
	hr := o.(*helmv2.HelmRelease)
	kind := hr.GetChartSourceKind()
	if kind == sourcev1.HelmChartKind {
		return nil
	}
	return []string{sourceIndexValue(kind, helmChartKey(hr))}
}

// chartArtifactChanged passes the events of an OCIRepository or
// ExternalArtifact that may let a HelmRelease render or change what it
// renders: a new artifact, a new generation observed.
type chartArtifactChanged struct{ predicate.Funcs }

func (chartArtifactChanged) Create(event.CreateEvent) bool { return true }

func (chartArtifactChanged) Update(e event.UpdateEvent) bool {
	a, b := sourceArtifact(e.ObjectOld), sourceArtifact(e.ObjectNew)
	if (a == nil) != (b == nil) || (a != nil && (a.Digest != b.Digest || a.Revision != b.Revision || a.URL != b.URL)) {
		return true
	}
	return observedGeneration(e.ObjectOld) != observedGeneration(e.ObjectNew)
}

func (chartArtifactChanged) Delete(event.DeleteEvent) bool   { return true }
func (chartArtifactChanged) Generic(event.GenericEvent) bool { return false }

// observedGeneration is status.observedGeneration of a kind that has one;
// -1 for one that has none (an ExternalArtifact).
func observedGeneration(o client.Object) int64 {
	if g, ok := o.(interface{ GetObservedGeneration() int64 }); ok {
		return g.GetObservedGeneration()
	}
	return -1
}

// waitArtifactChart is reconcileChartSource for an OCIRepository or
// ExternalArtifact: Rendered=False with reason DependencyNotReady while
// it is missing, has a generation source-controller has not reconciled
// yet (an OCIRepository), is Stalled, or has no artifact. As in Flux, an
// OCIRepository that is not Ready but still serves the artifact of its
// current spec is rendered: a failed poll of the registry keeps the last
// chart pulled.
func (r *HelmReleaseReconciler) waitArtifactChart(ctx context.Context, st *helmState) error {
	src := newSource(st.kind)
	if src == nil {
		// The CRD's enum refuses other kinds; an object stored before a
		// downgrade may hold one.
		return plumbreconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("spec.chartRef.kind %q is not a chart source kind", st.kind))
	}
	if err := r.Get(ctx, st.chartKey, src); err != nil {
		if apierrors.IsNotFound(err) {
			return r.waitChart(st, "it does not exist")
		}
		return err
	}
	a := sourceArtifact(src)
	getter, hasConditions := src.(conditions.Getter)
	switch g := observedGeneration(src); {
	case g >= 0 && g != src.GetGeneration():
		return r.waitChart(st, fmt.Sprintf("source-controller has not reconciled generation %d yet", src.GetGeneration()))
	case hasConditions && conditions.IsStalled(getter):
		return r.waitChart(st, "it is stalled: "+conditions.GetMessage(getter, meta.StalledCondition))
	case a == nil || a.URL == "" || a.Digest == "":
		return r.waitChart(st, "it has no artifact yet"+producedFrom(src))
	}
	st.artifact = a
	return nil
}

// artifactRevision is the revision of st's artifact when it decides the
// release's revision (an OCIRepository's or ExternalArtifact's), ""
// for a HelmChart's, whose revision is the chart version itself.
func artifactRevision(st *helmState) string {
	if st.kind == sourcev1.HelmChartKind {
		return ""
	}
	return st.artifact.Revision
}

// chartRevision is the revision of a render of chart version version
// from st's source, as Flux reports it: the chart version for a HelmChart;
// for an OCIRepository, and an ExternalArtifact whose revision holds a
// digest, the chart version with the first 12 hex digits of the
// artifact's digest as semver build metadata (6.6.1+0cc9a8446c95), so
// that new content pushed under the same version is a new release. An
// OCIRepository's revision <tag>@<digest> whose tag is a semver version
// other than the chart's is an error, as in Flux: the tag and the chart
// disagree about what is released. ociDigest is the digest appended.
func chartRevision(kind, artifactRevision, version string) (revision, ociDigest string, err error) {
	if kind == sourcev1.HelmChartKind {
		return version, "", nil
	}
	digest := artifactRevision
	if tag, d, ok := strings.Cut(artifactRevision, "@"); ok {
		digest = d
		// An OCI tag cannot hold "+": Helm pushes 1.0.0+build as 1.0.0_build.
		if tv, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil {
			cv, err := semver.NewVersion(version)
			if err != nil {
				return "", "", fmt.Errorf("the chart version %q is not semver", version)
			}
			if !tv.Equal(cv) {
				return "", "", fmt.Errorf("the artifact's tag %s does not match the chart's version %s", tag, version)
			}
		}
	}
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || algo == "" || len(hex) < 12 {
		if kind == sourcev1.ExternalArtifactKind {
			// An ExternalArtifact's revision may be a plain version.
			return version, "", nil
		}
		return "", "", fmt.Errorf("the artifact revision %q holds no digest", artifactRevision)
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return "", "", fmt.Errorf("the chart version %q is not semver", version)
	}
	withDigest, err := v.SetMetadata(hex[:12])
	if err != nil {
		return "", "", fmt.Errorf("appending the digest to the chart version %q: %w", version, err)
	}
	return withDigest.String(), digest, nil
}
