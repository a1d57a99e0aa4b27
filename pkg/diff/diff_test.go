package diff

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

const deployLive = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env:
        - {name: MODE, value: live}
`

const deployDesired = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 1
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env:
        - {name: MODE, value: live}
`

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name          string
		live, desired string
		want          Result
	}{
		{
			name:    "created when there is no live object",
			desired: deployDesired,
			want:    Result{Object: "Deployment/shop/web", Action: Created},
		},
		{
			name: "deleted when there is no desired object",
			live: deployLive,
			want: Result{Object: "Deployment/shop/web", Action: Deleted},
		},
		{
			name: "neither",
			want: Result{Action: Unchanged},
		},
		{
			name:    "equal",
			live:    deployDesired,
			desired: deployDesired,
			want:    Result{Object: "Deployment/shop/web", Action: Unchanged},
		},
		{
			name:    "scalar: a foreign scale to 3 is reverted to 1",
			live:    deployLive,
			desired: deployDesired,
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: "spec.replicas", Before: "3", After: "1"},
			}},
		},
		{
			name: "list element field",
			live: deployDesired,
			desired: strings.Replace(strings.Replace(deployDesired, "nginx:1.27", "nginx:1.28", 1),
				"value: live", "value: \"on\"", 1),
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: "spec.template.spec.containers[0].env[0].value", Before: `"live"`, After: `"on"`},
				{Path: "spec.template.spec.containers[0].image", Before: `"nginx:1.27"`, After: `"nginx:1.28"`},
			}},
		},
		{
			name: "list element added and removed",
			live: deployDesired,
			desired: strings.Replace(deployDesired, "        - {name: MODE, value: live}\n",
				"        - {name: MODE, value: live}\n        - {name: DEBUG, value: \"1\"}\n", 1),
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: "spec.template.spec.containers[0].env[1]", After: `{"name":"DEBUG","value":"1"}`},
			}},
		},
		{
			name: "list element removed",
			live: strings.Replace(deployDesired, "        - {name: MODE, value: live}\n",
				"        - {name: MODE, value: live}\n        - {name: DEBUG, value: \"1\"}\n", 1),
			desired: deployDesired,
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: "spec.template.spec.containers[0].env[1]", Before: `{"name":"DEBUG","value":"1"}`},
			}},
		},
		{
			name:    "map key added, removed, and a key that needs quoting",
			live:    strings.Replace(deployDesired, "labels: {app: web}\nspec:\n  replicas", "labels: {app: web, tier: front}\nspec:\n  replicas", 1),
			desired: strings.Replace(deployDesired, "labels: {app: web}\nspec:\n  replicas", "labels: {app: web, app.kubernetes.io/name: web}\nspec:\n  replicas", 1),
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: `metadata.labels["app.kubernetes.io/name"]`, After: `"web"`},
				{Path: "metadata.labels.tier", Before: `"front"`},
			}},
		},
		{
			name: "nested map appears whole",
			live: deployDesired,
			desired: strings.Replace(deployDesired, "        image: nginx:1.27\n",
				"        image: nginx:1.27\n        resources: {limits: {memory: 64Mi}}\n", 1),
			want: Result{Object: "Deployment/shop/web", Action: Configured, Changes: []Change{
				{Path: "spec.template.spec.containers[0].resources", After: `{"limits":{"memory":"64Mi"}}`},
			}},
		},
		{
			name:    "type change",
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "1"}}`,
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: "x"}`,
			want: Result{Object: "ConfigMap/c", Action: Configured, Changes: []Change{
				{Path: "data", Before: `{"a":"1"}`, After: `"x"`},
			}},
		},
		{
			name:    "null versus absent is a change, null versus null is not",
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: null, b: null}}`,
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {b: null}}`,
			want: Result{Object: "ConfigMap/c", Action: Configured, Changes: []Change{
				{Path: "data.a", Before: "null"},
			}},
		},
		{
			name:    "HTML characters stay readable",
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "x<y"}}`,
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "x>y & z"}}`,
			want: Result{Object: "ConfigMap/c", Action: Configured, Changes: []Change{
				{Path: "data.a", Before: `"x<y"`, After: `"x>y & z"`},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Diff(obj(t, tc.live), obj(t, tc.desired), nil)).To(Equal(tc.want))
		})
	}
}

// TestNoFalsePositive: a live object and its dry-run counterpart differ only
// in what the server owns, in key order and in empty metadata maps.
func TestNoFalsePositive(t *testing.T) {
	g := NewWithT(t)
	live, dry := file(t, "deployment-live.yaml"), file(t, "deployment-dryrun.yaml")
	g.Expect(Diff(live, dry, nil)).To(Equal(Result{Object: "Deployment/shop/web", Action: Unchanged}))

	t.Run("empty labels and annotations versus absent", func(t *testing.T) {
		g := NewWithT(t)
		a := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {}, annotations: {}}, data: {k: v}}`)
		b := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}, data: {k: v}}`)
		g.Expect(Diff(a, b, nil).Action).To(Equal(Unchanged))
		g.Expect(Diff(b, a, nil).Action).To(Equal(Unchanged))
	})
	t.Run("int64 and float64 of the same number", func(t *testing.T) {
		g := NewWithT(t)
		a := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"replicas": int64(2)}}}
		b := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"replicas": float64(2)}}}
		g.Expect(Diff(a, b, nil).Action).To(Equal(Unchanged))
	})
	t.Run("inputs are not modified", func(t *testing.T) {
		g := NewWithT(t)
		live, dry := file(t, "deployment-live.yaml"), file(t, "deployment-dryrun.yaml")
		before, after := live.DeepCopy(), dry.DeepCopy()
		ig, err := NewIgnorer([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas", "/metadata/labels/app"}}})
		g.Expect(err).NotTo(HaveOccurred())
		Diff(live, dry, ig)
		g.Expect(live).To(Equal(before))
		g.Expect(dry).To(Equal(after))
	})
}

func TestNormalize(t *testing.T) {
	g := NewWithT(t)
	n := Normalize(file(t, "deployment-live.yaml"))
	g.Expect(n.Object).NotTo(HaveKey("status"))
	md := n.Object["metadata"].(map[string]any)
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"} {
		g.Expect(md).NotTo(HaveKey(f))
	}
	g.Expect(n.GetAnnotations()).To(Equal(map[string]string{"deployment.kubernetes.io/revision": "3"}))
	g.Expect(n.GetLabels()).To(HaveKeyWithValue("app", "web"))
	g.Expect(Normalize(nil)).To(BeNil())

	onlyLastApplied := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: null, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}}`)
	g.Expect(Normalize(onlyLastApplied).Object["metadata"]).To(Equal(map[string]any{"name": "c"}))

	// Scalars of types outside JSON's do not make the copy panic.
	odd := &unstructured.Unstructured{Object: map[string]any{"kind": "X", "spec": map[string]any{"n": 3, "l": []any{int32(1)}}}}
	g.Expect(Normalize(odd).Object["spec"]).To(Equal(map[string]any{"n": 3, "l": []any{int32(1)}}))
}

const secretLive = `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
type: Opaque
data:
  user: YWRtaW4=
  password: c2hvcnQ=
  removed: b2xkLXNlY3JldC12YWx1ZQ==
  same: c2FtZQ==
`

const secretDesired = `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
type: Opaque
data:
  user: YWRtaW4=
  password: YS1tdWNoLWxvbmdlci1wYXNzd29yZC10aGFuLWJlZm9yZQ==
  added: bmV3LXNlY3JldA==
  same: c2FtZQ==
stringData:
  token: plain-text-token
`

func TestSecretRedaction(t *testing.T) {
	g := NewWithT(t)
	res := Diff(obj(t, secretLive), obj(t, secretDesired), nil)
	g.Expect(res.Action).To(Equal(Configured))
	g.Expect(res.Changes).To(Equal([]Change{
		{Path: "data.added", After: Redacted},
		{Path: "data.password", Before: Redacted, After: Redacted},
		{Path: "data.removed", Before: Redacted},
		{Path: "stringData.token", After: Redacted},
	}))
	// No value, encoded or not, appears anywhere in what leaves the package.
	out, _ := json.Marshal(struct {
		R Result
		P []string
	}{res, res.Paths()})
	for _, secret := range []string{"YWRtaW4", "c2hvcnQ", "b2xkLXNlY3JldC12YWx1ZQ", "YS1tdWNo", "bmV3LXNlY3JldA", "plain-text-token", "admin", "short"} {
		g.Expect(string(out)).NotTo(ContainSubstring(secret))
	}

	t.Run("whole data map added or of the wrong type", func(t *testing.T) {
		g := NewWithT(t)
		noData := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}}`)
		withData := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: c2VjcmV0}}`)
		g.Expect(Diff(noData, withData, nil).Changes).To(Equal([]Change{{Path: "data.k", After: Redacted}}))
		g.Expect(Diff(withData, noData, nil).Changes).To(Equal([]Change{{Path: "data.k", Before: Redacted}}))
		odd := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: c2VjcmV0}`)
		res := Diff(withData, odd, nil)
		g.Expect(res.Changes).To(Equal([]Change{{Path: "data.k", Before: Redacted}, {Path: "data", Before: Redacted, After: Redacted}}))
	})
	t.Run("a Secret-like custom kind is not redacted", func(t *testing.T) {
		g := NewWithT(t)
		a := obj(t, `{apiVersion: example.com/v1, kind: Secret, metadata: {name: s}, data: {k: a}}`)
		b := obj(t, `{apiVersion: example.com/v1, kind: Secret, metadata: {name: s}, data: {k: b}}`)
		g.Expect(Diff(a, b, nil).Changes).To(Equal([]Change{{Path: "data.k", Before: `"a"`, After: `"b"`}}))
	})
	t.Run("other Secret fields are shown", func(t *testing.T) {
		g := NewWithT(t)
		a := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, labels: {a: b}}, type: Opaque}`)
		b := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, labels: {a: c}}, type: Opaque}`)
		g.Expect(Diff(a, b, nil).Changes).To(Equal([]Change{{Path: "metadata.labels.a", Before: `"b"`, After: `"c"`}}))
	})
}

func TestDiffWithIgnoreRules(t *testing.T) {
	live := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, team: a}
  annotations: {example.com/owner: someone, plumb.dev/ignore: "yes"}
spec:
  replicas: 5
  template:
    spec:
      containers:
      - {name: web, image: nginx:1.27}
      - {name: sidecar, image: envoy:1}
`
	desired := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, team: a}
  annotations: {plumb.dev/ignore: "yes"}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - {name: web, image: nginx:1.27}
      - {name: sidecar, image: envoy:2}
`
	allChanges := []Change{
		{Path: `metadata.annotations["example.com/owner"]`, Before: `"someone"`},
		{Path: "spec.replicas", Before: "5", After: "1"},
		{Path: "spec.template.spec.containers[1].image", Before: `"envoy:1"`, After: `"envoy:2"`},
	}
	noReplicas := []Change{allChanges[0], allChanges[2]}
	rule := func(target *kustomizev1.Selector, paths ...string) []kustomizev1.IgnoreRule {
		return []kustomizev1.IgnoreRule{{Paths: paths, Target: target}}
	}
	for _, tc := range []struct {
		name  string
		rules []kustomizev1.IgnoreRule
		want  []Change
	}{
		{"no rules", nil, allChanges},
		{"no target selects every object", rule(nil, "/spec/replicas"), noReplicas},
		{"empty target selects every object", rule(&kustomizev1.Selector{}, "/spec/replicas"), noReplicas},
		{"all three paths", rule(nil, "/spec/replicas", "/metadata/annotations/example.com~1owner", "/spec/template/spec/containers/1/image"), nil},
		{"a list element by index", rule(nil, "/spec/template/spec/containers/1"), allChanges[:2]},
		{"a path that does not exist", rule(nil, "/spec/paused", "/spec/template/spec/containers/7/image", "/spec/replicas/x"), allChanges},
		{"~1 unescaped, not a nested path", rule(nil, "/metadata/annotations/example.com/owner"), allChanges},
		{"group, version and kind match", rule(&kustomizev1.Selector{Group: "apps", Version: "v1", Kind: "Deployment"}, "/spec/replicas"), noReplicas},
		{"kind does not match", rule(&kustomizev1.Selector{Kind: "StatefulSet"}, "/spec/replicas"), allChanges},
		{"group does not match", rule(&kustomizev1.Selector{Group: "extensions"}, "/spec/replicas"), allChanges},
		{"version does not match", rule(&kustomizev1.Selector{Version: "v2"}, "/spec/replicas"), allChanges},
		{"kind is case-sensitive", rule(&kustomizev1.Selector{Kind: "deployment"}, "/spec/replicas"), allChanges},
		{"name regex matches", rule(&kustomizev1.Selector{Name: "web-[0-9]+"}, "/spec/replicas"), noReplicas},
		{"name regex is anchored", rule(&kustomizev1.Selector{Name: "web"}, "/spec/replicas"), allChanges},
		{"name regex alternation is anchored as a whole", rule(&kustomizev1.Selector{Name: "api|web-1"}, "/spec/replicas"), noReplicas},
		{"namespace matches", rule(&kustomizev1.Selector{Namespace: "shop"}, "/spec/replicas"), noReplicas},
		{"namespace does not match", rule(&kustomizev1.Selector{Namespace: "other"}, "/spec/replicas"), allChanges},
		{"label selector matches", rule(&kustomizev1.Selector{LabelSelector: "app=web,team in (a,b)"}, "/spec/replicas"), noReplicas},
		{"label selector does not match", rule(&kustomizev1.Selector{LabelSelector: "team!=a"}, "/spec/replicas"), allChanges},
		{"annotation selector matches", rule(&kustomizev1.Selector{AnnotationSelector: "plumb.dev/ignore=yes"}, "/spec/replicas"), noReplicas},
		{"annotation selector does not match", rule(&kustomizev1.Selector{AnnotationSelector: "plumb.dev/ignore=no"}, "/spec/replicas"), allChanges},
		{"every selector field must match", rule(&kustomizev1.Selector{Kind: "Deployment", Namespace: "other"}, "/spec/replicas"), allChanges},
		{"rules add up", []kustomizev1.IgnoreRule{
			{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}},
			{Paths: []string{"/spec/template/spec/containers/1/image"}, Target: &kustomizev1.Selector{Kind: "Service"}},
			{Paths: []string{"/metadata/annotations/example.com~1owner"}},
		}, allChanges[2:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ig, err := NewIgnorer(tc.rules)
			g.Expect(err).NotTo(HaveOccurred())
			res := Diff(obj(t, live), obj(t, desired), ig)
			g.Expect(res.Changes).To(Equal(tc.want))
			if tc.want == nil {
				g.Expect(res.Action).To(Equal(Unchanged))
			} else {
				g.Expect(res.Action).To(Equal(Configured))
			}
		})
	}
}

// TestIgnoreLeavesNoEmptyParent: removing the only annotation on one side
// must not leave "annotations: {}" to differ from the side without any.
func TestIgnoreLeavesNoEmptyParent(t *testing.T) {
	g := NewWithT(t)
	ig, err := NewIgnorer([]kustomizev1.IgnoreRule{{Paths: []string{
		"/metadata/annotations/example.com~1owner",
		"/spec/template/metadata/annotations/restartedAt",
		"/spec/list/0",
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	live := obj(t, `{apiVersion: example.com/v1, kind: Thing, metadata: {name: t, annotations: {example.com/owner: x}},
	  spec: {template: {metadata: {annotations: {restartedAt: "now"}}}, list: [a]}}`)
	desired := obj(t, `{apiVersion: example.com/v1, kind: Thing, metadata: {name: t}, spec: {}}`)
	g.Expect(Diff(live, desired, ig)).To(Equal(Result{Object: "Thing/t", Action: Unchanged}))
}

func TestIgnorerApply(t *testing.T) {
	g := NewWithT(t)
	ig, err := NewIgnorer([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}}})
	g.Expect(err).NotTo(HaveOccurred())
	d := obj(t, deployDesired)
	ig.Apply(d)
	_, found, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	g.Expect(found).To(BeFalse())
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, spec: {replicas: 1}}`)
	ig.Apply(cm)
	g.Expect(cm.Object["spec"]).To(Equal(map[string]any{"replicas": int64(1)}))

	var none *Ignorer
	none.Apply(d)
	ig.Apply(nil)
	g.Expect(none.fieldsIn(d, d, nil)).To(BeEmpty())
}

func TestNewIgnorerErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []kustomizev1.IgnoreRule
		want  string
	}{
		{"no fields", []kustomizev1.IgnoreRule{{Paths: []string{"/a"}}, {}}, "spec.ignore[1]: paths, jqPathExpressions or managedFieldsManagers is required"},
		{"jq syntax", []kustomizev1.IgnoreRule{{JQPathExpressions: []string{".spec | select("}}}, "spec.ignore[0].jqPathExpressions[0]: jq expression \".spec | select(\" does not parse"},
		{"jq not a path", []kustomizev1.IgnoreRule{{JQPathExpressions: []string{".metadata.name", ".spec | tostring"}}}, "spec.ignore[0].jqPathExpressions[1]: jq expression \".spec | tostring\" is not a path expression"},
		{"relative pointer", []kustomizev1.IgnoreRule{{Paths: []string{"/ok", "spec/replicas"}}}, `spec.ignore[0].paths[1]: JSON pointer "spec/replicas" must start with '/'`},
		{"empty pointer", []kustomizev1.IgnoreRule{{Paths: []string{""}}}, "spec.ignore[0].paths[0]: empty JSON pointer"},
		{"bad escape", []kustomizev1.IgnoreRule{{Paths: []string{"/a~2b"}}}, "invalid escape '~2'"},
		{"bad name regex", []kustomizev1.IgnoreRule{{Paths: []string{"/a"}, Target: &kustomizev1.Selector{Name: "web-(["}}}, "spec.ignore[0].target.name: invalid regular expression"},
		{"bad label selector", []kustomizev1.IgnoreRule{{Paths: []string{"/a"}, Target: &kustomizev1.Selector{LabelSelector: "app in (a"}}}, "spec.ignore[0].target.labelSelector:"},
		{"bad annotation selector", []kustomizev1.IgnoreRule{{Paths: []string{"/a"}, Target: &kustomizev1.Selector{AnnotationSelector: "=x"}}}, "spec.ignore[0].target.annotationSelector:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := NewIgnorer(tc.rules)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
