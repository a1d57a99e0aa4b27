package flux

import (
	"fmt"
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
)

// PlumbSubstituteKey is render-controller's own key for leaving an object
// out of substitution (pkg/render.SubstituteAnnotation, which imports this
// package), a label or an annotation.
const PlumbSubstituteKey = "kustomize.plumb.dev/substitute"

// Conflicts lists the pairs of m where Plumb's annotation and Flux's key
// are both set and ask for different things: a prune kept by one and not
// the other, a recreate allowed by one and not the other, another apply
// policy, substitution left out by one only. Plumb's is followed, as in
// pkg/argocd, whose Conflict type it shares.
func Conflicts(m Metadata) []argocd.Conflict {
	var out []argocd.Conflict
	ann := m.GetAnnotations()
	pair := func(plumbKey, plumbValue string, flux Found) {
		out = append(out, argocd.Conflict{
			Followed: fmt.Sprintf("%s: %q", plumbKey, plumbValue),
			Ignored:  flux.String(),
		})
	}
	// both checks a yes-or-no setting: Plumb's annotation says yes when
	// its value is plumbYes, Flux's key when it is fluxYes.
	both := func(plumbKey, plumbYes, fluxKey, fluxYes string, plumbLabelsToo bool) {
		v, ok := ann[plumbKey]
		if !ok && plumbLabelsToo {
			v, ok = m.GetLabels()[plumbKey]
		}
		if !ok {
			return
		}
		f, set := find(m, fluxKey, fluxYes, oppositeOf(fluxYes))
		if set && (v == plumbYes) != strings.EqualFold(f.Value, fluxYes) {
			pair(plumbKey, v, f)
		}
	}
	both(kustomizev1.PruneAnnotation, kustomizev1.DisabledValue, PruneKey, Disabled, false)
	both(kustomizev1.ForceAnnotation, kustomizev1.EnabledValue, ForceKey, Enabled, false)
	both(PlumbSubstituteKey, kustomizev1.DisabledValue, SubstituteKey, Disabled, true)
	if v, ok := ann[kustomizev1.SSAAnnotation]; ok {
		if f, set := find(m, SSAKey, Override, Merge, IfNotPresent, Ignore); set && !strings.EqualFold(f.Value, v) {
			pair(kustomizev1.SSAAnnotation, v, f)
		}
	}
	return out
}

// oppositeOf is the other value of a yes-or-no key.
func oppositeOf(v string) string {
	if v == Enabled {
		return Disabled
	}
	return Enabled
}
