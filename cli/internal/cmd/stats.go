package cmd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

func newStatsCmd(g *globals) *cobra.Command {
	var allNamespaces bool
	c := &cobra.Command{
		Use:   "stats",
		Short: "Count the objects of each Plumb kind that are Ready, Failed or Suspended, and their artifacts' size",
		Long: "stats prints, for every Plumb kind, how many objects are Ready (Ready=True),\n" +
			"Failed (Ready=False), Suspended (spec.suspend, whatever their Ready) and in all,\n" +
			"and the total size of the artifacts they keep in storage: a GitRepository's,\n" +
			"HelmRepository's or HelmChart's status.artifact, a Kustomization's or\n" +
			"HelmRelease's status.renderedArtifact. An object that is\n" +
			"neither suspended nor Ready=True/False (not reconciled yet) counts in TOTAL only.\n\n" +
			"When any object carries the shard key label sharding.plumb.dev/key, a SHARD\n" +
			"column splits each kind by its value, (none) for the objects of the main\n" +
			"instance: the work each shard's controllers do.",
		Example: "  plumb stats -A\n  plumb stats -n team-a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.run(cmd, func(ctx context.Context) error { return g.stats(ctx, allNamespaces) })
		},
	}
	c.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Count the objects of every namespace.")
	return c
}

// kindStats are the counts of one kind.
type kindStats struct {
	ready, failed, suspended, total int
	storage                         int64
	hasStorage                      bool
}

// noShard is the SHARD of the objects without the shard key: the main
// instance's.
const noShard = "(none)"

func (g *globals) stats(ctx context.Context, allNamespaces bool) error {
	// Reconcilers only: an ExternalArtifact is written by another program.
	reconcilers := kindsWhere(func(k *kind) bool { return len(k.def.Controllers) > 0 })
	listed := make([][]client.Object, len(reconcilers))
	sharded := false
	for i, k := range reconcilers {
		items, err := g.list(ctx, k, allNamespaces)
		if err != nil {
			return err
		}
		listed[i] = items
		for _, o := range items {
			if _, ok := o.GetLabels()[meta.ShardKeyLabel]; ok {
				sharded = true
			}
		}
	}
	w := tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	header := "RECONCILERS\tREADY\tFAILED\tSUSPENDED\tTOTAL\tSTORAGE"
	if sharded {
		header = "RECONCILERS\tSHARD\tREADY\tFAILED\tSUSPENDED\tTOTAL\tSTORAGE"
	}
	fmt.Fprintln(w, header)
	for i, k := range reconcilers {
		byShard := map[string][]client.Object{}
		for _, o := range listed[i] {
			shard, ok := o.GetLabels()[meta.ShardKeyLabel]
			if !ok {
				shard = noShard
			}
			byShard[shard] = append(byShard[shard], o)
		}
		shards := slices.Sorted(maps.Keys(byShard))
		if len(shards) == 0 {
			shards = []string{noShard}
		}
		// The main instance's first; "(" sorts before any label value,
		// which begins with a letter or digit.
		for _, shard := range shards {
			st := countKind(k, byShard[shard])
			storage := "-"
			if st.hasStorage {
				storage = humanBytes(st.storage)
			}
			name := k.Kind
			if sharded {
				name += "\t" + shard
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", name, st.ready, st.failed, st.suspended, st.total, storage)
		}
	}
	return w.Flush()
}

func countKind(k *kind, items []client.Object) kindStats {
	var st kindStats
	for _, o := range items {
		st.total++
		s := k.status(o)
		switch c := s.condition(meta.ReadyCondition); {
		case s.suspended:
			st.suspended++
		case c != nil && c.Status == metav1.ConditionTrue:
			st.ready++
		case c != nil && c.Status == metav1.ConditionFalse:
			st.failed++
		}
		var a *meta.Artifact
		switch o := o.(type) {
		case *sourcev1.GitRepository:
			st.hasStorage, a = true, o.Status.Artifact
		case *sourcev1.HelmRepository:
			st.hasStorage, a = true, o.Status.Artifact
		case *sourcev1.HelmChart:
			st.hasStorage, a = true, o.Status.Artifact
		case *kustomizev1.Kustomization:
			st.hasStorage, a = true, o.Status.RenderedArtifact
		case *helmv2.HelmRelease:
			st.hasStorage, a = true, o.Status.RenderedArtifact
		}
		if a != nil && a.Size != nil {
			st.storage += *a.Size
		}
	}
	return st
}

// humanBytes renders a size in binary units as Flux's stats does
// (512 B, 2.4 KiB, 13.0 MiB).
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %siB", float64(n)/float64(div), strings.Split("K M G T P E", " ")[exp])
}
