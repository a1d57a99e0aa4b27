package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"

	helmv2 "plumb.dev/api/helm/v2"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inspect"
)

// describeHelmRelease prints one HelmRelease the way describeKustomization
// prints a Kustomization, with its chart, its release and the release
// history that Helm would keep in Secrets and Plumb keeps in
// status.history.
func (g *globals) describeHelmRelease(ctx context.Context, hr *helmv2.HelmRelease, now time.Time) error {
	w := tabwriter.NewWriter(g.out, 0, 8, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(w, "%s:\t%s\n", name, value) }

	field("Name", hr.Name)
	field("Namespace", hr.Namespace)
	field("Chart", g.chartText(ctx, hr))
	phase := "installed"
	if inspect.DeployedRelease(hr) == nil {
		phase = "installing (no release deployed yet)"
	}
	field("Release", hr.GetReleaseNamespace()+"/"+hr.GetReleaseName()+", "+phase)
	field("Suspended", fmt.Sprint(hr.Spec.Suspend))
	field("Applied revision", dash(hr.Status.LastAppliedRevision))
	attempted := dash(hr.Status.LastAttemptedRevision)
	if d := hr.Status.LastAttemptedConfigDigest; d != "" {
		attempted += " (values " + d + ")"
	}
	field("Attempted revision", attempted)
	if a := hr.Status.RenderedArtifact; a != nil {
		r := a.Revision + " (" + a.Digest + ")"
		if name := a.Metadata[helmv2.ArtifactChartNameKey]; name != "" {
			r += ", chart " + name + " " + a.Metadata[helmv2.ArtifactChartVersionKey]
		}
		if d := a.Metadata[helmv2.ArtifactConfigDigestKey]; d != "" {
			r += ", values " + d
		}
		field("Rendered revision", r)
	} else {
		field("Rendered revision", "-")
	}
	n := 0
	if hr.Status.Inventory != nil {
		n = len(hr.Status.Inventory.Entries)
	}
	field("Inventory", fmt.Sprintf("%d object(s)", n))
	describeAttempts(hr, field)
	return g.describeApplied(ctx, appliedHelmRelease(hr), w, field, func() { g.printHistory(hr, now) }, now)
}

// chartText words where a release's chart comes from: the HelmChart, its
// chart, version and artifact, and its source.
func (g *globals) chartText(ctx context.Context, hr *helmv2.HelmRelease) string {
	key := inspect.HelmChartKey(hr)
	if kind := hr.GetChartSourceKind(); kind != sourcev1.HelmChartKind {
		// A chartRef's OCIRepository or ExternalArtifact: the artifact is
		// the chart.
		text := kind + "/" + key.Namespace + "/" + key.Name
		if k := kindOfRef(kind); k != nil {
			src := k.newObj()
			if err := g.client.Get(ctx, key, src); err != nil {
				return text + " (" + notFound(err, k, key).Error() + ")"
			}
			if rev := k.status(src).revision; rev != "" {
				return text + " at " + rev + ", " + sourceURL(src)
			}
			return text + " (no artifact yet), " + sourceURL(src)
		}
		return text
	}
	if hr.Status.HelmChart != "" {
		if ns, name, ok := strings.Cut(hr.Status.HelmChart, "/"); ok {
			key = types.NamespacedName{Namespace: ns, Name: name}
		}
	}
	text := sourcev1.HelmChartKind + "/" + key.Namespace + "/" + key.Name
	if t := hr.Spec.Chart; t != nil {
		text = fmt.Sprintf("%s %s from %s/%s", t.Spec.Chart, dash(t.Spec.Version), t.Spec.SourceRef.Kind, t.Spec.SourceRef.Name) + ", " + text
	}
	chart := &sourcev1.HelmChart{}
	if err := g.client.Get(ctx, key, chart); err != nil {
		return text + " (" + notFound(err, helmChartKind, key).Error() + ")"
	}
	if hr.Spec.Chart == nil {
		text += fmt.Sprintf(" (%s %s from %s/%s)", chart.Spec.Chart, dash(chart.Spec.Version), chart.Spec.SourceRef.Kind, chart.Spec.SourceRef.Name)
	}
	if a := chart.Status.Artifact; a != nil {
		text += " at " + a.Revision
	} else {
		text += " (no artifact yet)"
	}
	srcKind, srcKey := chartSourceKey(chart)
	src := srcKind.newObj()
	if err := g.client.Get(ctx, srcKey, src); err == nil {
		text += ", " + sourceURL(src)
	}
	return text
}

// printHistory prints status.history, newest first, as `helm history`
// prints a release's.
func (g *globals) printHistory(hr *helmv2.HelmRelease, now time.Time) {
	fmt.Fprintln(g.out)
	fmt.Fprintln(g.out, "HISTORY:")
	if len(hr.Status.History) == 0 {
		fmt.Fprintln(g.out, "(no release yet)")
		return
	}
	w := tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "REVISION\tSTATUS\tCHART\tVALUES\tDIGEST\tDEPLOYED\tDESCRIPTION")
	for _, s := range hr.Status.History {
		fmt.Fprintf(w, "%d\t%s\t%s-%s\t%s\t%s\t%s ago\t%s\n", s.Version, s.Status, s.ChartName, s.ChartVersion,
			shortDigest(s.ConfigDigest), shortDigest(s.Digest), age(s.LastDeployed.Time, now), dash(oneLine(s.Description)))
	}
	_ = w.Flush()
}

// shortDigest cuts "sha256:<64 hex>" to its first 12 hex digits, as
// container tools print image IDs.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return dash(d)
	}
	return algo + ":" + hex[:12]
}
