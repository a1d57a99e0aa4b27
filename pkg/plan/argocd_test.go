package plan

import (
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/object"
)

// argoSet is what repositories written for Argo CD carry: its hook, wave
// and delete-policy annotations, read as Argo CD reads them, next to
// Plumb's, which win.
const argoSet = `
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: v1, kind: Service, metadata: {name: frontend, namespace: shop, annotations: {argocd.argoproj.io/sync-wave: "1"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: upgrade-sql-schema-, namespace: shop, annotations: {argocd.argoproj.io/hook: PostSync}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: maintenance-page-up-, namespace: shop, annotations: {argocd.argoproj.io/hook: Sync, argocd.argoproj.io/sync-wave: "1"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: before, namespace: shop, annotations: {argocd.argoproj.io/hook: PreSync, argocd.argoproj.io/hook-delete-policy: HookSucceeded}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: on-fail, namespace: shop, annotations: {argocd.argoproj.io/hook: " SyncFail ,Bogus", argocd.argoproj.io/hook-delete-policy: "HookFailed,Never", helm.sh/hook-delete-policy: hook-succeeded}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: skipped, namespace: shop, annotations: {argocd.argoproj.io/hook: "PreSync,Skip"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: never-runs, namespace: shop, annotations: {argocd.argoproj.io/hook: bogus}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: on-delete, namespace: shop, annotations: {argocd.argoproj.io/hook: PreDelete}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: helm-instead, namespace: shop, annotations: {argocd.argoproj.io/hook: bogus, helm.sh/hook: pre-install, helm.sh/hook-weight: "-2"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: lenient-wave, namespace: shop, annotations: {argocd.argoproj.io/sync-wave: " 2"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: plumb-wave, namespace: shop, annotations: {plumb.dev/sync-wave: "3", argocd.argoproj.io/sync-wave: "5"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: plumb-hook, namespace: shop, annotations: {plumb.dev/hook: PreSync, argocd.argoproj.io/hook: PostSync, argocd.argoproj.io/hook-delete-policy: HookSucceeded}}}
`

func TestArgoCDAnnotations(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, argoSet, Options{SyncID: "r1/1", Install: true})
	g.Expect(p.String()).To(Equal(lines(`
PreSync wave -2: Job/shop/helm-instead
PreSync wave 0: Job/shop/before, Job/shop/plumb-hook
Sync wave 0: ConfigMap/shop/cfg, ConfigMap/shop/lenient-wave
Sync wave 1: Service/shop/frontend, Job/shop/maintenance-page-up-121adf84
Sync wave 3: ConfigMap/shop/plumb-wave
PostSync wave 0: Job/shop/upgrade-sql-schema-2eb24464
SyncFail wave 0: Job/shop/on-fail
`)))
	var inv []string
	for _, o := range p.Inventory {
		inv = append(inv, object.IDOf(o).String())
	}
	g.Expect(inv).To(Equal([]string{"ConfigMap/shop/cfg", "ConfigMap/shop/lenient-wave", "Service/shop/frontend", "ConfigMap/shop/plumb-wave"}))

	policies := map[string][]DeletePolicy{}
	for _, h := range p.Hooks() {
		policies[h.ID().Name] = h.Hook.DeletePolicies
	}
	g.Expect(policies).To(HaveKeyWithValue("before", []DeletePolicy{HookSucceeded}))
	// Argo CD's and Helm's policies together, unknown ones left out.
	g.Expect(policies).To(HaveKeyWithValue("on-fail", []DeletePolicy{HookFailed, HookSucceeded}))
	// plumb.dev/hook wins, and reads only Plumb's policy annotation.
	g.Expect(policies).To(HaveKeyWithValue("plumb-hook", []DeletePolicy{BeforeHookCreation}))
	g.Expect(policies).To(HaveKeyWithValue("upgrade-sql-schema-2eb24464", []DeletePolicy{BeforeHookCreation}))

	// Skip, a hook of no known type and a delete hook are hooks: never
	// applied by a sync, never in the inventory, never pruned while Git
	// has them.
	for _, o := range objs(t, argoSet) {
		switch o.GetName() {
		case "skipped", "never-runs", "on-delete":
			g.Expect(IsHook(o)).To(BeTrue(), o.GetName())
		case "cfg", "frontend", "lenient-wave", "plumb-wave":
			g.Expect(IsHook(o)).To(BeFalse(), o.GetName())
		}
	}
}

func TestArgoCDWaveIsLenientPlumbsIsNot(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x, annotations: {argocd.argoproj.io/sync-wave: "soon"}}}`, Options{})
	g.Expect(p.String()).To(Equal(lines("Sync wave 0: ConfigMap/x/a")))
	_, err := Build(objs(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x, annotations: {plumb.dev/sync-wave: "soon"}}}`), Options{})
	g.Expect(err).To(MatchError(ContainSubstring(`plumb.dev/sync-wave: "soon" is not an integer`)))
}

func TestArgoCDGenerateNameNeedsAHook(t *testing.T) {
	g := NewWithT(t)
	_, err := Build(objs(t, `{apiVersion: batch/v1, kind: Job, metadata: {generateName: x-, namespace: a}}`), Options{SyncID: "s"})
	g.Expect(err).To(MatchError(ContainSubstring("annotation plumb.dev/hook or argocd.argoproj.io/hook")))
}
