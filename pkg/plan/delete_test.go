package plan

import (
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/object"
)

// deleteHookSet is an application with sync hooks, delete hooks (Plumb's
// and Helm's) and a hook that runs both in a sync and on deletion.
const deleteHookSet = `
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: shop, annotations: {plumb.dev/hook: PreSync}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: drain, namespace: shop, annotations: {plumb.dev/hook: PreDelete, plumb.dev/hook-delete-policy: HookSucceeded}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: drain-script, namespace: shop, annotations: {plumb.dev/hook: PreDelete, plumb.dev/sync-wave: "-1"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: backup, namespace: shop, annotations: {plumb.dev/hook: "PreSync, PreDelete", plumb.dev/sync-wave: "-1", plumb.dev/hook-delete-policy: "HookSucceeded,HookFailed"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: notify, namespace: ops, annotations: {plumb.dev/hook: PostDelete, plumb.dev/sync-wave: "2"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: deregister, namespace: ops, annotations: {plumb.dev/hook: PostDelete}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: helm-pre, namespace: shop, annotations: {helm.sh/hook: pre-delete, helm.sh/hook-weight: "-3", helm.sh/hook-delete-policy: hook-succeeded}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: helm-post, namespace: ops, annotations: {helm.sh/hook: "post-delete,post-install"}}}
`

func TestBuildDeletePlansOnlyDeleteHooks(t *testing.T) {
	g := NewWithT(t)
	p, err := BuildDelete(objs(t, deleteHookSet), Options{SyncID: "deletion"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.String()).To(Equal(lines(`
PreDelete wave -3: Job/shop/helm-pre
PreDelete wave -1: ConfigMap/shop/drain-script, Job/shop/backup
PreDelete wave 0: Job/shop/drain
PostDelete wave 0: Job/ops/deregister, Job/ops/helm-post
PostDelete wave 2: Job/ops/notify
`)))
	g.Expect(p.Inventory).To(BeEmpty())
	g.Expect(p.SyncFail.Waves).To(BeEmpty())

	policies := map[string][]DeletePolicy{}
	for _, h := range p.Hooks() {
		policies[string(h.Phase)+" "+h.ID().String()] = h.Hook.DeletePolicies
	}
	g.Expect(policies).To(Equal(map[string][]DeletePolicy{
		"PreDelete Job/shop/helm-pre":           {HookSucceeded},
		"PreDelete ConfigMap/shop/drain-script": {BeforeHookCreation},
		"PreDelete Job/shop/backup":             {HookSucceeded, HookFailed},
		"PreDelete Job/shop/drain":              {HookSucceeded},
		"PostDelete Job/ops/deregister":         {BeforeHookCreation},
		"PostDelete Job/ops/helm-post":          {BeforeHookCreation},
		"PostDelete Job/ops/notify":             {BeforeHookCreation},
	}))
	pre, ok := p.Phase(PreDelete)
	g.Expect(ok).To(BeTrue())
	g.Expect(pre.Waves).To(HaveLen(3))
	_, ok = p.Phase(PreSync)
	g.Expect(ok).To(BeFalse())
}

func TestSyncNeverPlansDeleteHooks(t *testing.T) {
	for _, install := range []bool{true, false} {
		g := NewWithT(t)
		p := mustBuild(t, deleteHookSet, Options{SyncID: "sync", Install: install})
		want := `
PreSync wave -1: Namespace/shop, Job/shop/backup
PreSync wave 0: Job/shop/migrate
Sync wave 0: ConfigMap/shop/cfg, Deployment/shop/web
`
		if install {
			want += "PostSync wave 0: Job/ops/helm-post\n"
		}
		g.Expect(p.String()).To(Equal(lines(want)), "install %v", install)
		var inv []string
		for _, o := range p.Inventory {
			inv = append(inv, object.IDOf(o).String())
		}
		// Delete hooks are hooks: never in a sync's inventory, never pruned.
		g.Expect(inv).To(Equal([]string{"Namespace/shop", "ConfigMap/shop/cfg", "Deployment/shop/web"}))
		for _, h := range p.Hooks() {
			g.Expect(h.Hook.Phases).NotTo(ContainElements(PreDelete, PostDelete), h.ID().String())
		}
		var pruned []string
		for _, o := range Flatten(PruneOrder(objs(t, deleteHookSet))) {
			pruned = append(pruned, object.IDOf(o).String())
		}
		g.Expect(pruned).To(Equal([]string{"Deployment/shop/web", "ConfigMap/shop/cfg", "Namespace/shop"}))
	}
}

func TestDeleteHookNames(t *testing.T) {
	const set = `
{apiVersion: batch/v1, kind: Job, metadata: {generateName: cleanup-, namespace: shop, annotations: {plumb.dev/hook: PostDelete}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: cleanup-, namespace: shop, annotations: {plumb.dev/hook: PreDelete}}}
`
	g := NewWithT(t)
	// A sync has nothing to name: generateName delete hooks are not planned.
	g.Expect(mustBuild(t, set, Options{}).Phases).To(BeEmpty())

	name := func(id string) []string {
		p, err := BuildDelete(objs(t, set), Options{SyncID: id})
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, h := range p.Hooks() {
			g.Expect(h.Hook.GenerateName).To(Equal("cleanup-"))
			g.Expect(h.GetName()).To(HavePrefix("cleanup-"))
			out = append(out, h.GetName())
		}
		return out
	}
	first := name("deletion-1")
	g.Expect(first).To(HaveLen(2))
	g.Expect(first[0]).NotTo(Equal(first[1]))
	g.Expect(name("deletion-1")).To(Equal(first), "a restarted controller finds the hooks it created")
	g.Expect(name("deletion-2")).NotTo(ContainElements(first[0], first[1]))

	_, err := BuildDelete(objs(t, set), Options{})
	g.Expect(err).To(MatchError(ContainSubstring("naming a generateName hook needs a sync id")))
}

func TestBuildDeleteErrors(t *testing.T) {
	for _, tc := range []struct {
		name, docs string
		want       []string
	}{{
		name: "unknown phase names the accepted ones",
		docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: "PreDelete,OnDelete"}}}`,
		want: []string{`Job/ns/j: annotation plumb.dev/hook: unknown phase "OnDelete" (want PreSync, Sync, PostSync, SyncFail, PreDelete or PostDelete)`},
	}, {
		name: "bad wave on a delete hook",
		docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: PostDelete, plumb.dev/sync-wave: later}}}`,
		want: []string{`Job/ns/j: annotation plumb.dev/sync-wave: "later" is not an integer`},
	}, {
		name: "two delete hooks of one name in one phase",
		docs: `
{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: PreDelete}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: "PreDelete,PostDelete"}}}
`,
		want: []string{`Job/ns/j: two PreDelete hooks with this name (objects #1 and #2)`},
	}, {
		name: "unknown policy",
		docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: PreDelete, plumb.dev/hook-delete-policy: Never}}}`,
		want: []string{`Job/ns/j: annotation plumb.dev/hook-delete-policy: unknown policy "Never"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := BuildDelete(objs(t, tc.docs), Options{SyncID: "d"})
			g.Expect(err).To(HaveOccurred())
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

// A regular object's bad annotation is the sync's business: it does not
// hold a deletion, which plans hooks only.
func TestBuildDeleteIgnoresRegularObjects(t *testing.T) {
	g := NewWithT(t)
	p, err := BuildDelete(objs(t, `
{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, annotations: {plumb.dev/sync-wave: soon}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {generateName: b-, namespace: ns}}
`), Options{SyncID: "d"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Phases).To(BeEmpty())
}

// Argo CD's PreDelete and PostDelete hooks are Plumb's: never in a sync,
// planned by BuildDelete with Argo CD's delete policies.
func TestArgoCDDeleteHooks(t *testing.T) {
	const set = `
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: drain, namespace: shop, annotations: {argocd.argoproj.io/hook: PreDelete, argocd.argoproj.io/hook-delete-policy: HookSucceeded}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: bye-, namespace: shop, annotations: {argocd.argoproj.io/hook: PostDelete, argocd.argoproj.io/sync-wave: "1"}}}
`
	g := NewWithT(t)
	g.Expect(mustBuild(t, set, Options{SyncID: "s"}).String()).To(Equal(lines(`Sync wave 0: ConfigMap/shop/cfg`)))
	p, err := BuildDelete(objs(t, set), Options{SyncID: "d"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Phases).To(HaveLen(2))
	pre, _ := p.Phase(PreDelete)
	g.Expect(pre.String()).To(Equal(lines(`PreDelete wave 0: Job/shop/drain`)))
	g.Expect(pre.Waves[0].Objects[0].Hook.DeletePolicies).To(Equal([]DeletePolicy{HookSucceeded}))
	post, _ := p.Phase(PostDelete)
	g.Expect(post.Waves[0].Number).To(Equal(1))
	g.Expect(post.Waves[0].Objects[0].GetName()).To(HavePrefix("bye-"))
}
