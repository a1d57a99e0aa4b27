package plan

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/object"
)

// objs decodes YAML documents separated by "---" lines.
func objs(t testing.TB, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		out = append(out, u)
	}
	return out
}

// lines trims a plan rendering given in a test.
func lines(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return strings.Join(out, "\n") + "\n"
}

func mustBuild(t *testing.T, docs string, opts Options) *Plan {
	t.Helper()
	p, err := Build(objs(t, docs), opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

// allKinds has one object of every ordered kind, plus other kinds, in a
// scrambled order.
const allKinds = `
{apiVersion: apiregistration.k8s.io/v1, kind: APIService, metadata: {name: v1.x.example.com}}
---
{apiVersion: example.com/v1, kind: Zeta, metadata: {name: z, namespace: a}}
---
{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web, namespace: a}}
---
{apiVersion: networking.k8s.io/v1, kind: IngressClass, metadata: {name: nginx}}
---
{apiVersion: batch/v1, kind: CronJob, metadata: {name: nightly, namespace: a}}
---
{apiVersion: serving.knative.dev/v1, kind: Service, metadata: {name: kn, namespace: a}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: once, namespace: a}}
---
{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db, namespace: a}}
---
{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: web, namespace: a}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a}}
---
{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs, namespace: a}}
---
{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}}
---
{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent, namespace: a}}
---
{apiVersion: v1, kind: Service, metadata: {name: web, namespace: a}}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: rb, namespace: a}}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: r, namespace: a}}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: crb}}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: cr}}
---
{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web, namespace: a}}
---
{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: zetas.example.com}, spec: {group: example.com, names: {kind: Zeta}}}
---
{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: a}}
---
{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}}
---
{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: a}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: b}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: a}}
---
{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: a}}
---
{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: a}}
---
{apiVersion: v1, kind: LimitRange, metadata: {name: lr, namespace: a}}
---
{apiVersion: v1, kind: ResourceQuota, metadata: {name: q, namespace: a}}
---
{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: deny, namespace: a}}
---
{apiVersion: example.com/v1, kind: Alpha, metadata: {name: x, namespace: b}}
---
{apiVersion: example.com/v1, kind: Alpha, metadata: {name: why, namespace: a}}
---
{apiVersion: other.example.com/v1, kind: Alpha, metadata: {name: a, namespace: a}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: a}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: b}}
`

func TestKindOrder(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, allKinds, Options{})
	g.Expect(p.Phases).To(HaveLen(1))
	g.Expect(p.Phases[0].Name).To(Equal(Sync))
	var ids []string
	for _, o := range Flatten(p.Phases[0].Waves) {
		ids = append(ids, object.IDOf(o).String())
	}
	g.Expect(ids).To(Equal([]string{
		"Namespace/a", "Namespace/b",
		"NetworkPolicy/a/deny", "ResourceQuota/a/q", "LimitRange/a/lr", "ServiceAccount/a/sa", "Secret/a/s",
		"ConfigMap/a/a", "ConfigMap/a/b", "ConfigMap/b/a",
		"StorageClass/fast", "PersistentVolume/pv", "PersistentVolumeClaim/a/data",
		"CustomResourceDefinition/zetas.example.com",
		"ClusterRole/cr", "ClusterRoleBinding/crb", "Role/a/r", "RoleBinding/a/rb",
		"Service/a/web", "DaemonSet/a/agent", "Pod/a/p", "ReplicaSet/a/rs", "Deployment/a/web",
		"HorizontalPodAutoscaler/a/web", "StatefulSet/a/db", "Job/a/once", "CronJob/a/nightly",
		"IngressClass/nginx", "Ingress/a/web", "APIService/v1.x.example.com",
		// then other kinds by kind, group, namespace, name
		"Alpha/a/why", "Alpha/b/x", "Alpha/a/a", "PodDisruptionBudget/a/web", "Service/a/kn", "Zeta/a/z",
	}))
	g.Expect(p.Inventory).To(HaveLen(len(ids)))
	g.Expect(p.Hooks()).To(BeEmpty())
	g.Expect(p.SyncFail.Waves).To(BeEmpty())

	// The order does not depend on the input order.
	in := objs(t, allKinds)
	for i, j := 0, len(in)-1; i < j; i, j = i+1, j-1 {
		in[i], in[j] = in[j], in[i]
	}
	p2, err := Build(in, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p2.String()).To(Equal(p.String()))
}

func TestWaves(t *testing.T) {
	for _, tc := range []struct {
		name, docs, want string
	}{
		{
			name: "ascending, default 0, negative allowed, kind order inside a wave",
			docs: `
{apiVersion: v1, kind: ConfigMap, metadata: {name: late, namespace: ns, annotations: {plumb.dev/sync-wave: "10"}}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: ns}}
---
{apiVersion: v1, kind: Secret, metadata: {name: early, namespace: ns, annotations: {plumb.dev/sync-wave: "-5"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: ns, annotations: {plumb.dev/sync-wave: " -1 "}}}
`,
			want: `
Sync wave -5: Secret/ns/early
Sync wave -1: Job/ns/migrate
Sync wave 0: ConfigMap/ns/cfg, Deployment/ns/web
Sync wave 10: ConfigMap/ns/late
`,
		},
		{
			name: "a Namespace with a later wave moves ahead of the first object in it",
			docs: `
{apiVersion: v1, kind: Namespace, metadata: {name: shop, annotations: {plumb.dev/sync-wave: "5"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop, annotations: {plumb.dev/sync-wave: "-2"}}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop, annotations: {plumb.dev/sync-wave: "3"}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: unused, annotations: {plumb.dev/sync-wave: "5"}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: early, annotations: {plumb.dev/sync-wave: "-9"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: early, annotations: {plumb.dev/sync-wave: "1"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: elsewhere, annotations: {plumb.dev/sync-wave: "-20"}}}
`,
			want: `
Sync wave -20: ConfigMap/elsewhere/cfg
Sync wave -9: Namespace/early
Sync wave -2: Namespace/shop, ConfigMap/shop/cfg
Sync wave 1: ConfigMap/early/cfg
Sync wave 3: Deployment/shop/web
Sync wave 5: Namespace/unused
`,
		},
		{
			name: "a CRD moves ahead of the first custom resource of its group and kind",
			docs: `
{apiVersion: example.com/v1, kind: Widget, metadata: {name: w2, namespace: ns, annotations: {plumb.dev/sync-wave: "4"}}}
---
{apiVersion: example.com/v1, kind: Widget, metadata: {name: w1, namespace: ns, annotations: {plumb.dev/sync-wave: "1"}}}
---
{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.com, annotations: {plumb.dev/sync-wave: "2"}},
 spec: {group: example.com, names: {kind: Widget, plural: widgets}}}
---
{apiVersion: other.example.com/v1, kind: Widget, metadata: {name: foreign, namespace: ns, annotations: {plumb.dev/sync-wave: "-1"}}}
---
{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: gadgets.example.com},
 spec: {group: example.com, names: {kind: Gadget, plural: gadgets}}}
---
{apiVersion: example.com/v1, kind: Gadget, metadata: {name: g, namespace: ns}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}
`,
			want: `
Sync wave -1: Widget/ns/foreign
Sync wave 0: ConfigMap/ns/c, CustomResourceDefinition/gadgets.example.com, Gadget/ns/g
Sync wave 1: CustomResourceDefinition/widgets.example.com, Widget/ns/w1
Sync wave 4: Widget/ns/w2
`,
		},
		{
			name: "the Namespace and CRD of one custom resource both move",
			docs: `
{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: shop, annotations: {plumb.dev/sync-wave: "-3"}}}
---
{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.com}, spec: {group: example.com, names: {kind: Widget}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
`,
			want: `
Sync wave -3: Namespace/shop, CustomResourceDefinition/widgets.example.com, Widget/shop/w
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			want := lines(tc.want)
			g.Expect(mustBuild(t, tc.docs, Options{}).String()).To(Equal(want))
		})
	}
}

func TestHoistedKeepsDeclaredWave(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, `
{apiVersion: v1, kind: Namespace, metadata: {name: shop, annotations: {plumb.dev/sync-wave: "5"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop, annotations: {plumb.dev/sync-wave: "1"}}}
`, Options{})
	ns := p.Phases[0].Waves[0].Objects[0]
	g.Expect(ns.ID().String()).To(Equal("Namespace/shop"))
	g.Expect(ns.Wave).To(Equal(1))
	g.Expect(ns.DeclaredWave).To(Equal(5))
}

func TestInvalidInput(t *testing.T) {
	for _, tc := range []struct {
		name, docs string
		opts       Options
		want       []string
	}{
		{
			name: "wave is not an integer",
			docs: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, annotations: {plumb.dev/sync-wave: "first"}}}`,
			want: []string{`ConfigMap/ns/c: annotation plumb.dev/sync-wave: "first" is not an integer`},
		},
		{
			name: "every bad wave is reported",
			docs: `
{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, annotations: {plumb.dev/sync-wave: "1.5"}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: b, annotations: {plumb.dev/sync-wave: "99999999999"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, annotations: {plumb.dev/sync-wave: ""}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: ok, namespace: ns, annotations: {plumb.dev/sync-wave: "+2"}}}
`,
			want: []string{`ConfigMap/ns/a: annotation plumb.dev/sync-wave: "1.5"`, `Namespace/b: annotation plumb.dev/sync-wave: "99999999999"`, `ConfigMap/ns/c: annotation plumb.dev/sync-wave: ""`},
		},
		{
			name: "unknown hook phase",
			docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: "PreSync,PostDeploy"}}}`,
			want: []string{`Job/ns/j: annotation plumb.dev/hook: unknown phase "PostDeploy"`},
		},
		{
			name: "empty hook annotation",
			docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: " , "}}}`,
			want: []string{`Job/ns/j: annotation plumb.dev/hook is empty`},
		},
		{
			name: "unknown delete policy",
			docs: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: PreSync, plumb.dev/hook-delete-policy: "HookSucceeded,Always"}}}`,
			want: []string{`Job/ns/j: annotation plumb.dev/hook-delete-policy: unknown policy "Always"`},
		},
		{
			name: "generateName on a regular object",
			docs: `{apiVersion: v1, kind: ConfigMap, metadata: {generateName: cfg-, namespace: ns}}`,
			want: []string{`ConfigMap/ns/cfg-* (object #1): metadata.generateName without a name is only allowed on a hook`},
		},
		{
			name: "generateName hook without a sync id",
			docs: `{apiVersion: batch/v1, kind: Job, metadata: {generateName: migrate-, namespace: ns, annotations: {plumb.dev/hook: PreSync}}}`,
			want: []string{`Job/ns/migrate-* (object #1): naming a generateName hook needs a sync id`},
		},
		{
			name: "no name",
			docs: `
{apiVersion: v1, kind: ConfigMap, metadata: {namespace: ns}}
---
{apiVersion: batch/v1, kind: Job, metadata: {namespace: ns, annotations: {plumb.dev/hook: PreSync}}}
`,
			opts: Options{SyncID: "s"},
			want: []string{"ConfigMap #1: has no metadata.name", "Job #2: a hook needs metadata.name or metadata.generateName"},
		},
		{
			name: "duplicates",
			docs: `
{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, annotations: {plumb.dev/sync-wave: "1"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: PreSync}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns, annotations: {plumb.dev/hook: "PreSync,PostSync"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, annotations: {plumb.dev/hook: PostSync}}}
`,
			want: []string{
				"ConfigMap/ns/c: appears twice (objects #1 and #2)",
				"Job/ns/j: two PreSync hooks with this name (objects #3 and #4)",
				"ConfigMap/ns/c: hook (object #5) has the identity of a regular object (object #1)",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Build(objs(t, tc.docs), tc.opts)
			g.Expect(p).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			g.Expect(strings.Count(err.Error(), "\n")+1).To(Equal(len(tc.want)), err.Error())
		})
	}
	t.Run("nil object and no kind", func(t *testing.T) {
		g := NewWithT(t)
		noKind := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}}
		_, err := Build([]*unstructured.Unstructured{nil, noKind}, Options{})
		g.Expect(err).To(MatchError("object #1 is empty\nobject #2 (name \"x\") has no kind"))
	})
}

const hookSet = `
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: shop, annotations: {plumb.dev/hook: PreSync, plumb.dev/hook-delete-policy: HookSucceeded}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: backup, namespace: shop, annotations: {plumb.dev/hook: PreSync, plumb.dev/sync-wave: "-1"}}}
---
{apiVersion: v1, kind: Pod, metadata: {name: warm, namespace: shop, annotations: {plumb.dev/hook: Sync, plumb.dev/sync-wave: "0"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: smoke, namespace: shop, annotations: {plumb.dev/hook: "PostSync, SyncFail", plumb.dev/hook-delete-policy: "HookSucceeded, HookFailed,HookSucceeded"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: page, namespace: shop, annotations: {plumb.dev/hook: SyncFail, plumb.dev/hook-delete-policy: BeforeHookCreation}}}
`

func TestHooks(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, hookSet, Options{SyncID: "main@sha1:abc/1"})
	// The Namespace moves into PreSync: the PreSync hooks in it need it.
	g.Expect(p.String()).To(Equal(lines(`
PreSync wave -1: Namespace/shop, Job/shop/backup
PreSync wave 0: Job/shop/migrate
Sync wave 0: ConfigMap/shop/cfg, Pod/shop/warm, Deployment/shop/web
PostSync wave 0: Job/shop/smoke
SyncFail wave 0: Job/shop/page, Job/shop/smoke
`)))
	var inv []string
	for _, o := range p.Inventory {
		inv = append(inv, object.IDOf(o).String())
	}
	g.Expect(inv).To(Equal([]string{"Namespace/shop", "ConfigMap/shop/cfg", "Deployment/shop/web"}))

	policies := map[string][]DeletePolicy{}
	phases := map[string][]PhaseName{}
	for _, h := range p.Hooks() {
		policies[h.ID().String()] = h.Hook.DeletePolicies
		phases[h.ID().String()] = h.Hook.Phases
		g.Expect(h.Hook.GenerateName).To(BeEmpty())
	}
	g.Expect(policies).To(Equal(map[string][]DeletePolicy{
		"Job/shop/migrate": {HookSucceeded},
		"Job/shop/backup":  {BeforeHookCreation},
		"Pod/shop/warm":    {BeforeHookCreation},
		"Job/shop/smoke":   {HookSucceeded, HookFailed},
		"Job/shop/page":    {BeforeHookCreation},
	}))
	g.Expect(phases["Job/shop/smoke"]).To(Equal([]PhaseName{PostSync, SyncFail}))
	g.Expect(p.Hooks()).To(HaveLen(6)) // smoke runs twice
	var smoke Object
	for _, h := range p.Hooks() {
		if h.GetName() == "smoke" {
			smoke = h
		}
	}
	g.Expect(smoke.Hook.HasPolicy(HookFailed)).To(BeTrue())
	g.Expect(smoke.Hook.HasPolicy(BeforeHookCreation)).To(BeFalse())
}

func TestSyncFailHooksPullNothing(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, `
{apiVersion: v1, kind: Namespace, metadata: {name: ops, annotations: {plumb.dev/sync-wave: "3"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: page, namespace: ops, annotations: {plumb.dev/hook: SyncFail, plumb.dev/sync-wave: "-5"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: after, namespace: ops, annotations: {plumb.dev/hook: PostSync, plumb.dev/sync-wave: "-5"}}}
`, Options{})
	// The PostSync hook's need is later than the Namespace's own place.
	g.Expect(p.String()).To(Equal(lines(`
Sync wave 3: Namespace/ops
PostSync wave -5: Job/ops/after
SyncFail wave -5: Job/ops/page
`)))
}

func TestGenerateName(t *testing.T) {
	const docs = `
{apiVersion: batch/v1, kind: Job, metadata: {generateName: migrate-, namespace: shop, annotations: {plumb.dev/hook: "PreSync,PostSync"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: migrate-, namespace: shop, annotations: {plumb.dev/hook: PreSync}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: fixed, generateName: ignored-, namespace: shop, annotations: {plumb.dev/hook: PreSync}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {generateName: a-very-long-generate-name-that-goes-on-and-on-and-on-for-ever-and-ever-, namespace: shop, annotations: {plumb.dev/hook: PostSync}}}
`
	names := func(t *testing.T, syncID string) []string {
		p := mustBuild(t, docs, Options{SyncID: syncID})
		var out []string
		for _, h := range p.Hooks() {
			out = append(out, string(p.phaseOf(h))+":"+h.GetName())
		}
		return out
	}
	g := NewWithT(t)
	first := names(t, "main@sha1:abc/1")
	g.Expect(first).To(HaveLen(5))
	g.Expect(names(t, "main@sha1:abc/1")).To(Equal(first), "deterministic for one sync id")
	second := names(t, "main@sha1:abc/2")
	for i := range first {
		if !strings.HasSuffix(first[i], ":fixed") {
			g.Expect(second[i]).NotTo(Equal(first[i]), "a new sync gives new names")
		}
	}
	seen := map[string]bool{}
	for _, n := range first {
		name := n[strings.Index(n, ":")+1:]
		g.Expect(seen).NotTo(HaveKey(name), "names are unique within a sync")
		seen[name] = true
		g.Expect(len(name)).To(BeNumerically("<=", 63))
		if name != "fixed" {
			g.Expect(name).To(MatchRegexp(`^(migrate-|a-very-long-generate-name-that-goes-on-and-on-and-on-fo)[0-9a-f]{8}$`))
		}
	}

	p := mustBuild(t, docs, Options{SyncID: "s"})
	for _, h := range p.Hooks() {
		if h.GetName() == "fixed" {
			// A name wins over generateName; the object goes out as written.
			g.Expect(h.Hook.GenerateName).To(BeEmpty())
			g.Expect(h.GetGenerateName()).To(Equal("ignored-"))
		} else {
			g.Expect(h.GetGenerateName()).To(BeEmpty())
			g.Expect(h.Hook.GenerateName).To(Or(Equal("migrate-"), HavePrefix("a-very-long")))
			g.Expect(h.GetName()).To(HavePrefix(h.Hook.GenerateName[:8]))
		}
	}
}

// phaseOf finds the phase a task is planned in (test helper).
func (p *Plan) phaseOf(o Object) PhaseName {
	for _, ph := range append(append([]Phase{}, p.Phases...), p.SyncFail) {
		for _, w := range ph.Waves {
			for _, x := range w.Objects {
				if x.Unstructured == o.Unstructured {
					return ph.Name
				}
			}
		}
	}
	return ""
}

func TestBuildDoesNotModifyInput(t *testing.T) {
	g := NewWithT(t)
	in := objs(t, hookSet+"\n---\n"+`{apiVersion: batch/v1, kind: Job, metadata: {generateName: g-, namespace: shop, annotations: {plumb.dev/hook: PreSync}}}`)
	copies := make([]*unstructured.Unstructured, len(in))
	for i, o := range in {
		copies[i] = o.DeepCopy()
	}
	p, err := Build(in, Options{SyncID: "x"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in).To(Equal(copies))

	// Shared, not copied: a regular object's task and a named hook's hold
	// the input itself (sync-controller's manifests cache keeps both);
	// only a generateName hook, named for the sync, is a copy.
	g.Expect(p.Inventory).To(HaveLen(3))
	for _, o := range p.Inventory {
		g.Expect(in).To(ContainElement(BeIdenticalTo(o)))
	}
	var generated int
	for _, h := range p.Hooks() {
		if h.Hook.GenerateName == "" {
			g.Expect(in).To(ContainElement(BeIdenticalTo(h.Unstructured)), h.ID().String())
			continue
		}
		generated++
		g.Expect(in).NotTo(ContainElement(BeIdenticalTo(h.Unstructured)))
		g.Expect(in[len(in)-1].GetName()).To(BeEmpty(), "the input keeps its generateName only")
	}
	g.Expect(generated).To(Equal(1))
}

func TestEmpty(t *testing.T) {
	g := NewWithT(t)
	p, err := Build(nil, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Phases).To(BeEmpty())
	g.Expect(p.Inventory).To(BeEmpty())
	g.Expect(p.SyncFail.Name).To(Equal(SyncFail))
	g.Expect(p.String()).To(BeEmpty())
	g.Expect(PruneOrder(nil)).To(BeEmpty())
}

func TestPruneOrder(t *testing.T) {
	g := NewWithT(t)
	in := objs(t, `
{apiVersion: v1, kind: Namespace, metadata: {name: shop, annotations: {plumb.dev/sync-wave: "9"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
---
{apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop, annotations: {plumb.dev/sync-wave: "2"}}}
---
{apiVersion: v1, kind: Secret, metadata: {name: early, namespace: shop, annotations: {plumb.dev/sync-wave: "-3"}}}
---
{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.com}, spec: {group: example.com, names: {kind: Widget}}}
---
{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: shop}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: hook, namespace: shop, annotations: {plumb.dev/hook: PreSync}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: odd, namespace: shop, annotations: {plumb.dev/sync-wave: "soon"}}}
`)
	waves := PruneOrder(in)
	var got []string
	for _, w := range waves {
		got = append(got, w.String())
	}
	g.Expect(got).To(Equal([]string{
		"wave 2: Service/shop/web",
		"wave 0: Widget/shop/w, Deployment/shop/web, CustomResourceDefinition/widgets.example.com, ConfigMap/shop/odd, ConfigMap/shop/cfg",
		"wave -3: Secret/shop/early, Namespace/shop",
	}))
	// PruneOrder works on the objects given, not on copies.
	g.Expect(Flatten(waves)[0]).To(BeIdenticalTo(in[3]))
}

// helmHookSet is `helm template` output with hooks of every kind.
const helmHookSet = `
{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: install-db, namespace: shop, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: "-5", helm.sh/hook-delete-policy: "hook-succeeded,before-hook-creation"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: shop, annotations: {helm.sh/hook: " pre-upgrade ", helm.sh/hook-weight: "2"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: both, namespace: shop, annotations: {helm.sh/hook: "post-upgrade,post-install,pre-install", helm.sh/hook-delete-policy: hook-failed}}}
---
{apiVersion: v1, kind: Pod, metadata: {name: test-conn, namespace: shop, annotations: {helm.sh/hook: test, helm.sh/hook-delete-policy: before-hook-creation}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: cleanup, namespace: shop, annotations: {helm.sh/hook: "pre-delete,post-rollback"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: odd-weight, namespace: shop, annotations: {helm.sh/hook: post-install, helm.sh/hook-weight: "soon", helm.sh/hook-delete-policy: "Hook-Succeeded,never"}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: plumb-wins, namespace: shop, annotations: {plumb.dev/hook: SyncFail, plumb.dev/sync-wave: "7", helm.sh/hook: pre-install, helm.sh/hook-weight: "-9", helm.sh/hook-delete-policy: hook-succeeded}}}
---
{apiVersion: batch/v1, kind: Job, metadata: {name: wave-wins, namespace: shop, annotations: {plumb.dev/sync-wave: "3", helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "-9"}}}
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: weight-only, namespace: shop, annotations: {helm.sh/hook-weight: "4"}}}
`

func TestHelmHooks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		install  bool
		rollback bool
		plan     string
		policies map[string][]DeletePolicy
	}{{
		name:    "install",
		install: true,
		plan: `
PreSync wave -5: Job/shop/install-db
PreSync wave 0: Job/shop/both
PreSync wave 3: Job/shop/wave-wins
Sync wave 0: ConfigMap/shop/cfg, ConfigMap/shop/weight-only
PostSync wave 0: Job/shop/both, Job/shop/odd-weight
SyncFail wave 7: Job/shop/plumb-wins
`,
		policies: map[string][]DeletePolicy{
			"Job/shop/install-db": {HookSucceeded, BeforeHookCreation},
			"Job/shop/both":       {HookFailed},
			"Job/shop/odd-weight": {HookSucceeded},
			"Job/shop/wave-wins":  {BeforeHookCreation},
			"Job/shop/plumb-wins": {BeforeHookCreation},
		},
	}, {
		name:    "upgrade",
		install: false,
		plan: `
PreSync wave 2: Job/shop/migrate
PreSync wave 3: Job/shop/wave-wins
Sync wave 0: ConfigMap/shop/cfg, ConfigMap/shop/weight-only
PostSync wave 0: Job/shop/both
SyncFail wave 7: Job/shop/plumb-wins
`,
		policies: map[string][]DeletePolicy{
			"Job/shop/migrate":    {BeforeHookCreation},
			"Job/shop/both":       {HookFailed},
			"Job/shop/wave-wins":  {BeforeHookCreation},
			"Job/shop/plumb-wins": {BeforeHookCreation},
		},
	}, {
		// A rollback runs the rollback hooks only, whatever Install says.
		name:     "rollback",
		install:  true,
		rollback: true,
		plan: `
Sync wave 0: ConfigMap/shop/cfg, ConfigMap/shop/weight-only
PostSync wave 0: Job/shop/cleanup
SyncFail wave 7: Job/shop/plumb-wins
`,
		policies: map[string][]DeletePolicy{
			"Job/shop/cleanup":    {BeforeHookCreation},
			"Job/shop/plumb-wins": {BeforeHookCreation},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustBuild(t, helmHookSet, Options{SyncID: "1.0.0/1", Install: tc.install, Rollback: tc.rollback})
			g.Expect(p.String()).To(Equal(lines(tc.plan)))
			var inv []string
			for _, o := range p.Inventory {
				inv = append(inv, object.IDOf(o).String())
			}
			// Test, delete and rollback hooks are never in the inventory,
			// nor hooks of the other kind of sync.
			g.Expect(inv).To(Equal([]string{"ConfigMap/shop/cfg", "ConfigMap/shop/weight-only"}))
			policies := map[string][]DeletePolicy{}
			for _, h := range p.Hooks() {
				policies[h.ID().String()] = h.Hook.DeletePolicies
			}
			g.Expect(policies).To(Equal(tc.policies))
			for _, o := range objs(t, helmHookSet) {
				isInventory := o.GetName() == "cfg" || o.GetName() == "weight-only"
				g.Expect(IsHook(o)).To(Equal(!isInventory), o.GetName())
			}
		})
	}
}

func TestHelmHookPhasesInPhaseOrder(t *testing.T) {
	g := NewWithT(t)
	p := mustBuild(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: a, annotations: {helm.sh/hook: "post-install,pre-install"}}}`, Options{Install: true})
	g.Expect(p.Hooks()).To(HaveLen(2))
	g.Expect(p.Hooks()[0].Hook.Phases).To(Equal([]PhaseName{PreSync, PostSync}))
}

func TestHelmHooksNotPruned(t *testing.T) {
	g := NewWithT(t)
	waves := PruneOrder(objs(t, helmHookSet))
	var names []string
	for _, o := range Flatten(waves) {
		names = append(names, o.GetName())
	}
	g.Expect(names).To(ConsistOf("cfg", "weight-only"))
}
