package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
)

// syncStatus says whether the cluster matches Git (or the chart), as Argo
// CD's sync status does, from status.drift, the Drifted condition and
// whether the newest render has been applied.
func syncStatus(t *applied) string {
	d := t.Drift
	if d != nil && len(d.Contested) > 0 {
		return fmt.Sprintf("OutOfSync (%d object(s) contested by another field manager)", len(d.Contested))
	}
	if c := apimeta.FindStatusCondition(t.Conditions, kustomizev1.DriftedCondition); c != nil && c.Status == "True" {
		return "OutOfSync (" + oneLine(c.Message) + ")"
	}
	if d != nil && d.Count > 0 && t.Policy == kustomizev1.DriftPolicyReport {
		return fmt.Sprintf("OutOfSync (%d object(s) differ from %s)", d.Count, t.Origin)
	}
	if a := t.Rendered; a != nil && !t.RenderApplied {
		return "OutOfSync (revision " + a.Revision + " rendered, not applied yet)"
	}
	if t.LastApplied == "" {
		return "Unknown (nothing applied yet)"
	}
	if d != nil && d.Count > 0 {
		when := ""
		if d.LastDetected != nil {
			when = ", last at " + d.LastDetected.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("Synced (%d drifted object(s) corrected%s)", d.Count, when)
	}
	return "Synced"
}

// describeKustomization prints one Kustomization the way `argocd app get`
// prints an application.
func (g *globals) describeKustomization(ctx context.Context, ks *kustomizev1.Kustomization, now time.Time) error {
	w := tabwriter.NewWriter(g.out, 0, 8, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(w, "%s:\t%s\n", name, value) }

	field("Name", ks.Name)
	field("Namespace", ks.Namespace)
	srcKey := types.NamespacedName{Namespace: ks.Spec.SourceRef.Namespace, Name: ks.Spec.SourceRef.Name}
	if srcKey.Namespace == "" {
		srcKey.Namespace = ks.Namespace
	}
	source := ks.Spec.SourceRef.Kind + "/" + srcKey.Namespace + "/" + srcKey.Name
	src := &sourcev1.GitRepository{}
	if err := g.client.Get(ctx, srcKey, src); err != nil {
		source += " (" + notFound(err, gitRepositoryKind, srcKey).Error() + ")"
	} else {
		source += " " + src.Spec.URL
		if src.Status.Artifact != nil {
			source += " at " + src.Status.Artifact.Revision
		}
	}
	field("Source", source)
	path := ks.Spec.Path
	if path == "" {
		path = "(the root)"
	}
	field("Path", path)
	field("Suspended", fmt.Sprint(ks.Spec.Suspend))
	field("Applied revision", dash(ks.Status.LastAppliedRevision))
	field("Attempted revision", dash(ks.Status.LastAttemptedRevision))
	if a := ks.Status.RenderedArtifact; a != nil {
		field("Rendered revision", a.Revision+" ("+a.Digest+")")
	} else {
		field("Rendered revision", "-")
	}
	return g.describeApplied(ctx, appliedKustomization(ks), w, field, nil, now)
}

// describeApplied prints what a Kustomization and a HelmRelease share
// after their own fields: sync status, health, the last sync, the
// history (when history is not nil), the conditions and the objects.
func (g *globals) describeApplied(ctx context.Context, t *applied, w *tabwriter.Writer, field func(name, value string), history func(), now time.Time) error {
	field("Sync status", syncStatus(t)+", "+t.policyText())
	field("Sync window", syncWindowText(t.Object, now))

	// Health: the worst object's, with the Healthy condition's verdict.
	rows, worst := g.objectRows(ctx, t)
	h := string(worst)
	if c := apimeta.FindStatusCondition(t.Conditions, kustomizev1.HealthyCondition); c != nil {
		h += fmt.Sprintf(" (Healthy=%s %s: %s)", c.Status, c.Reason, oneLine(c.Message))
	} else if len(rows) == 0 {
		h = "Unknown (no Healthy condition and no objects yet)"
	}
	field("Health", h)

	ready := apimeta.FindStatusCondition(t.Conditions, meta.ReadyCondition)
	last := "-"
	if ready != nil {
		last = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, oneLine(ready.Message))
	}
	field("Last sync result", last)
	if sp := t.Sync; sp != nil {
		op := fmt.Sprintf("%s, wave %d", dash(sp.Phase), sp.Wave)
		if sp.Revision != "" {
			op += ", revision " + sp.Revision
		}
		if sp.StartedAt != nil {
			op += ", started " + age(sp.StartedAt.Time, now) + " ago"
		}
		if sp.FinishedAt != nil {
			op += ", finished " + age(sp.FinishedAt.Time, now) + " ago"
		}
		if sp.Message != "" {
			op += ": " + oneLine(sp.Message)
		}
		field("Sync operation", op)
	} else {
		field("Sync operation", "-")
	}
	_ = w.Flush()

	if history != nil {
		history()
	}

	fmt.Fprintln(g.out)
	fmt.Fprintln(g.out, "CONDITIONS:")
	w = tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	conds := append([]metav1.Condition(nil), t.Conditions...)
	sort.SliceStable(conds, func(i, j int) bool {
		return conds[i].Type == meta.ReadyCondition && conds[j].Type != meta.ReadyCondition
	})
	for _, c := range conds {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime.Time, now), oneLine(c.Message))
	}
	_ = w.Flush()

	fmt.Fprintln(g.out)
	fmt.Fprintln(g.out, "OBJECTS:")
	if len(rows) == 0 {
		fmt.Fprintln(g.out, "(no objects applied yet)")
		return nil
	}
	w = tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "KIND\tNAMESPACE\tNAME\tHEALTH\tDRIFT")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.entry.Kind, dash(r.entry.Namespace), r.entry.Name, oneLine(r.health), r.drift)
	}
	_ = w.Flush()
	return nil
}

// objectRow is one line of a Kustomization's object table.
type objectRow struct {
	entry  kustomizev1.InventoryEntry
	health string
	drift  string
}

// objectRows reads every inventory entry's live object and health (as
// tree does) and what status.drift says about it; worst is the worst
// health among them, Healthy for none.
func (g *globals) objectRows(ctx context.Context, t *applied) ([]objectRow, health.Status) {
	worst := health.Healthy
	if t.Inventory == nil {
		return nil, worst
	}
	drifts := inspect.DriftByObject(t.Drift)
	live := inspect.ReadLive(ctx, g.client, t.Inventory.Entries)
	var rows []objectRow
	for _, e := range t.Inventory.Entries {
		r := objectRow{entry: e, drift: "-"}
		if obj, err := live.Get(e); err != nil {
			r.health = "Unknown: " + err.Error()
			worst = health.Unknown
		} else {
			h := health.Evaluate(obj)
			r.health = h.String()
			if health.Worse(h.Status, worst) {
				worst = h.Status
			}
		}
		if d := drifts[entryID(e)]; d != nil {
			r.drift = driftText(d, t.Policy)
		}
		rows = append(rows, r)
	}
	return rows, worst
}

// driftText words one object's drift for a table cell.
func driftText(d *inspect.ObjectDrift, policy kustomizev1.DriftPolicy) string {
	var parts []string
	if len(d.Paths) > 0 {
		verb := "drifted"
		if policy == kustomizev1.DriftPolicyCorrect {
			verb = "corrected"
		}
		parts = append(parts, verb+" "+strings.Join(d.Paths, ", "))
	}
	if d.Contested != nil {
		parts = append(parts, "⚔ "+contestedText(*d.Contested))
	}
	return strings.Join(parts, "; ")
}
