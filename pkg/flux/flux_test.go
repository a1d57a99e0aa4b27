package flux_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/flux"
)

func TestKeysAreLabelsOrAnnotationsOfAnyCase(t *testing.T) {
	g := NewWithT(t)
	g.Expect(flux.Has(flux.Maps{Labels: map[string]string{flux.PruneKey: "DISABLED"}}, flux.PruneKey, flux.Disabled)).To(BeTrue())
	g.Expect(flux.Has(flux.Maps{Annotations: map[string]string{flux.PruneKey: "disabled"}}, flux.PruneKey, flux.Disabled)).To(BeTrue())
	g.Expect(flux.Has(flux.Maps{Annotations: map[string]string{flux.PruneKey: " disabled"}}, flux.PruneKey, flux.Disabled)).
		To(BeFalse(), "Flux compares the value as written, without trimming")
	g.Expect(flux.Has(flux.Maps{}, flux.PruneKey, flux.Disabled)).To(BeFalse())
	g.Expect(flux.Has(nil, flux.PruneKey, flux.Disabled)).To(BeFalse())

	g.Expect(flux.MayRecreate(flux.Maps{Annotations: map[string]string{flux.ForceKey: "enabled"}})).To(BeTrue())
	g.Expect(flux.MayRecreate(flux.Maps{Annotations: map[string]string{flux.ForceKey: "disabled"}})).To(BeFalse())
	g.Expect(flux.SubstituteDisabled(flux.Maps{Labels: map[string]string{flux.SubstituteKey: "disabled"}})).To(BeTrue())
	g.Expect(flux.DriftDetectionDisabled(flux.Maps{Annotations: map[string]string{flux.DriftDetectionKey: "disabled"}})).To(BeTrue())
	g.Expect(flux.KeepsForeignFields(flux.Maps{Annotations: map[string]string{flux.SSAKey: "merge"}})).To(BeTrue())
	g.Expect(flux.TakesBackKubectlFields(flux.Maps{Annotations: map[string]string{flux.SSAKey: "Override"}})).To(BeTrue())
	g.Expect(flux.TakesBackKubectlFields(flux.Maps{})).To(BeFalse(), "only an Override written out")
}

func TestExcludedAndKeptFromPrune(t *testing.T) {
	g := NewWithT(t)
	f, ok := flux.Excluded(flux.Maps{Annotations: map[string]string{flux.SSAKey: "Ignore"}, Labels: map[string]string{flux.ReconcileKey: "disabled"}})
	g.Expect(ok).To(BeTrue())
	g.Expect(f.String()).To(Equal("label kustomize.toolkit.fluxcd.io/reconcile: disabled"), "reconcile is read first")
	_, ok = flux.Excluded(flux.Maps{Annotations: map[string]string{flux.SSAKey: "IfNotPresent"}})
	g.Expect(ok).To(BeFalse())

	f, ok = flux.KeptFromPrune(flux.Maps{Annotations: map[string]string{flux.PruneKey: "Disabled"}})
	g.Expect(ok).To(BeTrue())
	g.Expect(f).To(Equal(flux.Found{Key: flux.PruneKey, Value: "Disabled"}))
	_, ok = flux.KeptFromPrune(flux.Maps{Annotations: map[string]string{flux.PruneKey: "enabled"}})
	g.Expect(ok).To(BeFalse())
}

func TestConflictsWithPlumbsAnnotations(t *testing.T) {
	g := NewWithT(t)
	conflicts := flux.Conflicts(flux.Maps{
		Annotations: map[string]string{
			"plumb.dev/prune": "enabled", flux.PruneKey: "disabled",
			"plumb.dev/force": "enabled", flux.ForceKey: "Enabled",
			"plumb.dev/ssa": "IfNotPresent", flux.SSAKey: "Ignore",
		},
		Labels: map[string]string{flux.PlumbSubstituteKey: "disabled", flux.SubstituteKey: "enabled"},
	})
	var got []string
	for _, c := range conflicts {
		got = append(got, c.String())
	}
	g.Expect(got).To(ConsistOf(
		`plumb.dev/prune: "enabled" is followed, not annotation kustomize.toolkit.fluxcd.io/prune: disabled`,
		`plumb.dev/ssa: "IfNotPresent" is followed, not annotation kustomize.toolkit.fluxcd.io/ssa: Ignore`,
		`kustomize.plumb.dev/substitute: "disabled" is followed, not label kustomize.toolkit.fluxcd.io/substitute: enabled`,
	), "force agrees in both, so it is no conflict")
	g.Expect(flux.Conflicts(flux.Maps{Annotations: map[string]string{flux.PruneKey: "disabled"}})).To(BeEmpty(), "Flux's key alone")
}
