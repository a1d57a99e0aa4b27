package objectset

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	setv1 "plumb.dev/api/set/v1"
)

func list(raw ...string) setv1.ChildGenerator {
	l := &setv1.ListGenerator{}
	for _, r := range raw {
		l.Elements = append(l.Elements, apiextensionsv1.JSON{Raw: []byte(r)})
	}
	return setv1.ChildGenerator{List: l}
}

func evaluate(t *testing.T, gens ...setv1.Generator) ([]Element, error) {
	t.Helper()
	set := &setv1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Spec: setv1.ObjectSetSpec{Generators: gens}}
	return (&generators{}).elements(context.Background(), set)
}

// A matrix is every pair of its two children's elements, fields merged;
// a merge keeps the first child's elements, overlaid by the second's with
// equal keys (a dotted key reaches into a nested field).
func TestMatrixAndMerge(t *testing.T) {
	g := NewWithT(t)
	els, err := evaluate(t, setv1.Generator{Matrix: &setv1.MatrixGenerator{Generators: []setv1.ChildGenerator{
		list(`{"app": "api"}`, `{"app": "web"}`),
		list(`{"env": "dev", "replicas": 1}`, `{"env": "prod", "replicas": 3}`),
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(els).To(Equal([]Element{
		{"app": "api", "env": "dev", "replicas": int64(1)}, {"app": "api", "env": "prod", "replicas": int64(3)},
		{"app": "web", "env": "dev", "replicas": int64(1)}, {"app": "web", "env": "prod", "replicas": int64(3)},
	}))

	els, err = evaluate(t, setv1.Generator{Merge: &setv1.MergeGenerator{MergeKeys: []string{"cluster.name"}, Generators: []setv1.ChildGenerator{
		list(`{"cluster": {"name": "eu", "zone": "a"}, "size": "s"}`, `{"cluster": {"name": "us"}, "size": "s"}`),
		list(`{"cluster": {"name": "us"}, "size": "xl"}`, `{"cluster": {"name": "asia"}, "size": "m"}`),
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(els).To(Equal([]Element{
		{"cluster": map[string]any{"name": "eu", "zone": "a"}, "size": "s"},
		{"cluster": map[string]any{"name": "us"}, "size": "xl"},
	}))
}

// A matrix whose product passes MaxElements is refused before it is
// built.
func TestAMatrixOverTheBoundIsRefused(t *testing.T) {
	g := NewWithT(t)
	many := make([]string, 40)
	for i := range many {
		many[i] = `{"i": 1}`
	}
	_, err := evaluate(t, setv1.Generator{Matrix: &setv1.MatrixGenerator{Generators: []setv1.ChildGenerator{list(many...), list(many...)}}})
	g.Expect(err).To(MatchError(ContainSubstring("40 × 40 elements is more than 1000")))
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"apps/*", "apps/api", true},
		{"apps/*", "apps/api/base", false},
		{"apps/**", "apps/api/base", true},
		{"**/config.json", "config.json", true},
		{"**/config.json", "a/b/config.json", true},
		{"clusters/*/config.json", "clusters/eu/config.json", true},
		{"clusters/*/config.json", "clusters/eu/x/config.json", false},
		{"apps/[a-b]*", "apps/c", false},
	} {
		got, err := glob(c.pattern, c.name)
		if err != nil || got != c.want {
			t.Errorf("glob(%q, %q) = %v, %v; want %v", c.pattern, c.name, got, err, c.want)
		}
	}
}

// The template's output is bounded per element, in YAML documents, and
// in nodes after alias expansion; a missing field is an error naming it.
func TestRenderingIsBounded(t *testing.T) {
	g := NewWithT(t)
	render := func(tmpl string, el Element) error {
		tp, err := parseTemplate(tmpl)
		if err != nil {
			return err
		}
		_, _, err = renderElement(tp, el)
		return err
	}
	g.Expect(render(`{{ range .items }}{{ $.big }}{{ end }}`, Element{"items": make([]any, 100), "big": strings.Repeat("x", 10<<10)})).
		To(MatchError(ContainSubstring("too long")))
	g.Expect(render(strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", MaxDocuments+1), nil)).
		To(MatchError(ContainSubstring("more than 20 YAML documents")))
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	g.Expect(render(bomb, nil)).To(HaveOccurred())
	g.Expect(render("name: {{ .missing }}", Element{"name": "x"})).To(MatchError(ContainSubstring("missing")))
	g.Expect(render(`{{ define "x" }}{{ end }}`, nil)).To(MatchError(ContainSubstring("{{define}}")))
}

// Under --no-cross-namespace-refs a namespace anywhere in an object
// other than the set's is refused, with the field's path.
func TestCrossNamespaceReferencesAreRefused(t *testing.T) {
	g := NewWithT(t)
	set := &setv1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s"}}
	obj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.plumb.dev/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "k"},
			"spec": map[string]any{
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet", "namespace": "flux-system"},
				"dependsOn": []any{map[string]any{"name": "infra", "namespace": "team-a"}},
			},
		}}
	}
	g.Expect(admit(set, obj(), false)).To(Succeed())
	g.Expect(admit(set, obj(), true)).To(MatchError(ContainSubstring("spec.sourceRef.namespace names namespace flux-system")))
	o := obj()
	unstructured.RemoveNestedField(o.Object, "spec", "sourceRef", "namespace")
	g.Expect(admit(set, o, true)).To(Succeed())
	g.Expect(o.GetNamespace()).To(Equal("team-a"))
	_ = unstructured.SetNestedField(o.Object, "other", "spec", "targetNamespace")
	g.Expect(admit(set, o, true)).To(MatchError(ContainSubstring("spec.targetNamespace")))
}

func FuzzDecodeDocuments(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n")
	f.Add("a: &a [1]\nb: [*a, *a]\n")
	f.Fuzz(func(t *testing.T, text string) {
		objs, err := decodeDocuments(text)
		if err == nil {
			for _, o := range objs {
				if o.GetName() == "" || o.GetKind() == "" {
					t.Fatalf("an object without name or kind: %v", o.Object)
				}
			}
		}
	})
}
