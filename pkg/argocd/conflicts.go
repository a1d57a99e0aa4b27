package argocd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Conflict is a Plumb annotation and an Argo CD one on the same object
// that ask for different things. Plumb's is followed.
type Conflict struct {
	// Followed is Plumb's annotation and its value.
	Followed string
	// Ignored is Argo CD's annotation (and the option, for a sync
	// option) and its value.
	Ignored string
}

func (c Conflict) String() string { return c.Followed + " is followed, not " + c.Ignored }

// Conflicts lists the pairs of ann where Plumb's annotation and Argo CD's
// are both set and disagree: a different set of hook types or delete
// policies, another wave, or a prune or force setting one way in Plumb's
// annotation and the other way in Argo CD's sync options.
func Conflicts(ann map[string]string) []Conflict {
	var out []Conflict
	pair := func(plumbKey, argoKey string) {
		out = append(out, Conflict{
			Followed: fmt.Sprintf("%s: %q", plumbKey, ann[plumbKey]),
			Ignored:  fmt.Sprintf("%s: %q", argoKey, ann[argoKey]),
		})
	}
	if v, ok := ann[kustomizev1.HookAnnotation]; ok {
		if types, argo := Hook(ann); argo && !sameSet(Items(v), types) {
			pair(kustomizev1.HookAnnotation, HookAnnotation)
		}
	}
	if v, ok := ann[kustomizev1.HookDeletePolicyAnnotation]; ok {
		if _, argo := ann[HookDeletePolicyAnnotation]; argo && !sameSet(Items(v), HookDeletePolicies(ann)) {
			pair(kustomizev1.HookDeletePolicyAnnotation, HookDeletePolicyAnnotation)
		}
	}
	if v, ok := ann[kustomizev1.SyncWaveAnnotation]; ok {
		if _, argo := ann[SyncWaveAnnotation]; argo {
			plumbWave, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			argoWave, _ := Wave(ann)
			if err != nil || int(plumbWave) != argoWave {
				pair(kustomizev1.SyncWaveAnnotation, SyncWaveAnnotation)
			}
		}
	}
	// A sync option against Plumb's annotation of the same thing:
	// disabled (Prune=false) or enabled (Force=true) in one and not in
	// the other, when both say something.
	option := func(plumbKey, plumbValue, name, argoValue string) {
		v, ok := ann[plumbKey]
		if !ok {
			return
		}
		for _, item := range Items(ann[SyncOptionsAnnotation]) {
			k, val, found := strings.Cut(item, "=")
			if !found || k != name {
				continue
			}
			if (v == plumbValue) != (val == argoValue) {
				out = append(out, Conflict{
					Followed: fmt.Sprintf("%s: %q", plumbKey, v),
					Ignored:  fmt.Sprintf("%s: %s", SyncOptionsAnnotation, item),
				})
			}
			return
		}
	}
	option(kustomizev1.PruneAnnotation, kustomizev1.DisabledValue, "Prune", "false")
	option(kustomizev1.ForceAnnotation, kustomizev1.EnabledValue, "Force", "true")
	return out
}

// sameSet reports whether a and b hold the same strings, ignoring order
// and repeats.
func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}
