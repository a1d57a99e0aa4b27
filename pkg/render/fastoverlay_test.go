//lint:file-ignore SA1019 the tests hold the fast path to kustomize's builtin plugins, which krusty runs
package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// resIDSelector is a selector's id part.
func resIDSelector(group, version, kind, name, namespace string) resid.ResId {
	return resid.ResId{Gvk: resid.Gvk{Group: group, Version: version, Kind: kind}, Name: name, Namespace: namespace}
}

// overlayCorpus is objects of every generated kind under every generated
// name and namespace, and of the shapes kustomize's walks meet
// differently (a scalar, a null or a list on the way, containers where
// no field spec looks, an image in a volume, a CRD), some with the
// previous ids a transformer records.
func overlayCorpus(t *testing.T) []*resource.Resource {
	t.Helper()
	var docs []string
	for _, kind := range genKinds {
		for _, name := range genNames[:3] {
			for _, ns := range genNamespaces {
				docs = append(docs, kind(name, ns))
			}
		}
	}
	head := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
	for _, spec := range []string{
		"",
		"spec: null\n",
		"spec: x\n",
		"spec:\n- template: {spec: {containers: [{name: c, image: nginx:1}]}}\n",
		"spec: {template: {spec: ~}}\n",
		"spec: {template: x}\n",
		"spec: {template: {spec: {}}}\n",
		"spec: {template: {spec: {volumes: [{name: v, image: {reference: nginx:1}}]}}}\n",
		"spec: {template: {spec: {volumes: x}}}\n",
		"spec: {template: {spec: {containers: x}}}\n",
		"spec: {template: {spec: {containers: [x, {name: c}]}}}\n",
		"spec: {template: {metadata: {labels: {containers: x}}, spec: {}}}\n",
		"spec: {jobTemplate: {spec: {template: {spec: {initContainers: [{name: i, image: busybox}]}}}}}\n",
		"spec: {template: {spec: {containers: [{name: c, image: nginx:1}]}}}\n",
	} {
		docs = append(docs, head+spec)
	}
	docs = append(docs,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  nested: {a: {initContainers: [{image: nginx}]}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {l: [x]}\ndata: {k: v}\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: []\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  volumes: [{name: v, image: {reference: nginx}}]\n",
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: c\nspec:\n  containers: [{image: nginx}]\n",
	)
	all := parsedCorpus(docs)
	// Objects that a transformer renamed: their previous ids are what
	// selectors and the patch's id match too.
	for _, r := range all[:len(all)/4] {
		c := r.DeepCopy()
		c.StorePreviousId()
		c.SetName("renamed-" + c.GetName())
		all = append(all, c)
	}
	return all
}

// parsedCorpus is the objects kustomize's resource factory reads from
// docs; a document it refuses is left out: no object to compare.
func parsedCorpus(docs []string) []*resource.Resource {
	var all []*resource.Resource
	for _, doc := range docs {
		if rs, err := resourceFactory.SliceFromBytes([]byte(doc)); err == nil {
			all = append(all, rs...)
		}
	}
	return all
}

// An object imageless says the image transformer finds nothing in is
// left by the transformer exactly as it was, for every generated image,
// and without an error; the objects with an image where it looks are not
// imageless.
func TestImagelessObjectsAreThoseTheImageTransformerLeaves(t *testing.T) {
	k := overlayKustomization(nil, &kustomizev1.KustomizationSpec{Images: genImages})
	images := append([]kustypes.Image{{Name: "registry.example/app", NewTag: "2.0"}}, k.Images...)
	var skipped, given int
	for _, r := range overlayCorpus(t) {
		before, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		leaves := true
		for _, img := range images {
			p, ok := imagePlugin(img)
			if !ok {
				t.Fatal("configuring the image transformer")
			}
			copied := r.DeepCopy()
			m := resmap.New()
			if err := m.Append(copied); err != nil {
				t.Fatal(err)
			}
			if err := p.Transform(m); err != nil {
				leaves = false
				continue
			}
			after, err := copied.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				leaves = false
			}
		}
		if imageless(r) {
			skipped++
			if !leaves {
				t.Errorf("imageless, but the image transformer changes or refuses it:\n%s", before)
			}
		} else {
			given++
		}
	}
	if skipped < 20 || given < 20 {
		t.Fatalf("%d objects imageless, %d not: want both often", skipped, given)
	}
}

// selects is kustomize's Select of a resource map holding the object
// alone, for every generated target and a few more (regular expressions,
// namespaces, versions, selectors that do not parse), on every object of
// the corpus, renamed ones included.
func TestSelectsIsSelectOfAMapOfOne(t *testing.T) {
	var targets []*kustypes.Selector
	for _, p := range overlayKustomization(nil, &kustomizev1.KustomizationSpec{Patches: genPatches}).Patches {
		if p.Target != nil {
			targets = append(targets, p.Target)
		}
	}
	for _, s := range []kustypes.Selector{
		{},
		{ResId: resIDSelector("", "", "", "renamed-.*", "")},
		{ResId: resIDSelector("", "", "", "", "default")},
		{ResId: resIDSelector("", "", "", "", "a|t")},
		{ResId: resIDSelector("apps", "v1", "Deploy.*", "", "")},
		{ResId: resIDSelector("", "v1", "", "a", "")},
		{LabelSelector: "app notin (a)"},
		{LabelSelector: "!app"},
		{AnnotationSelector: "config.kubernetes.io/local-config"},
		{LabelSelector: "app in (a"},
	} {
		targets = append(targets, &s)
	}
	var picked, compared int
	for _, r := range overlayCorpus(t) {
		for _, target := range targets {
			sr, err := kustypes.NewSelectorRegex(target)
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := selects(sr, target, r)
			m := resmap.New()
			if err := m.Append(r); err != nil {
				t.Fatal(err)
			}
			sel, wantErr := m.Select(*target)
			if (gotErr != nil) != (wantErr != nil) || gotErr == nil && got != (len(sel) == 1) {
				t.Errorf("target %+v: selects says %t (%v), Select %d (%v), for\n%s", *target, got, gotErr, len(sel), wantErr, r.MustYaml())
			}
			compared++
			if got {
				picked++
			}
		}
	}
	if picked < compared/10 || picked > compared*9/10 {
		t.Fatalf("%d of %d selected: want both outcomes often", picked, compared)
	}
}

// nodeOfJSON makes of a decoded JSON value the node kustomize's
// RNode.UnmarshalJSON parses: the same kinds, tags and values, mapping by
// mapping (keys in any order), over strings that read as other types,
// numbers at the edges of int64 and float64, and empty collections.
func TestNodeOfJSONIsWhatUnmarshalJSONParses(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		`{"a": "b", "c": {"d": [1, 2.5, -0, 1e6, 1e21, 1e-7, 9007199254740993, 18446744073709551615, 18446744073709551616, -9223372036854775808]}}`,
		`{"s": ["true", "false", "null", "~", "", "123", "1.5", "0x1F", "0o17", "1e3", "<<", "yes", "no", "2001-12-14", ".inf", "-.nan", "a: b", "- x", "#c", "multi\nline\n", " lead", "trail ", "\t", "é", "'q'", "\"dq\""]}`,
		`{"b": [true, false, null], "e": {"m": {}, "l": [], "n": null}, "": "empty key", "1": "one", "true": "t"}`,
		`{"b": [true, false, null], "<<": {"x": 1}}`,
		`{"l": ["<<"]}`,
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"patched": "true"}, "annotations": {"x": "1"}}, "data": {"k": "v", "settings.yaml": "name: a\nreplicas: 1\n"}}`,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		want := kyaml.NewMapRNode(nil)
		if err := want.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatal(err)
		}
		got, ok := nodeOfJSON(m)
		if strings.Contains(doc, `"<<"`) {
			if ok {
				t.Errorf("%s: taken, but go-yaml reads its \"<<\" back as a merge key", doc)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: not taken", doc)
		}
		if d := nodeDifference(got, want.YNode(), ""); d != "" {
			t.Errorf("%s: %s", doc, d)
		}
		gotYAML, err := canonicalYAML(kyaml.NewRNode(got))
		if err != nil {
			t.Fatal(err)
		}
		wantYAML, err := canonicalYAML(want)
		if err != nil {
			t.Fatal(err)
		}
		if gotYAML != wantYAML {
			t.Errorf("%s: printed\n%s\nkustomize's node prints\n%s", doc, gotYAML, wantYAML)
		}
	}
}

// nodeDifference says where got and want differ in kind, tag or value,
// mappings compared key by key whatever their order; "" when they do
// not.
func nodeDifference(got, want *kyaml.Node, at string) string {
	if got.Kind != want.Kind || got.Tag != want.Tag || got.Value != want.Value {
		return fmt.Sprintf("at %q: kind %d, tag %s, value %q; want kind %d, tag %s, value %q", at, got.Kind, got.Tag, got.Value, want.Kind, want.Tag, want.Value)
	}
	if len(got.Content) != len(want.Content) {
		return fmt.Sprintf("at %q: %d nodes, want %d", at, len(got.Content), len(want.Content))
	}
	if got.Kind != kyaml.MappingNode {
		for i := range got.Content {
			if d := nodeDifference(got.Content[i], want.Content[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		return ""
	}
	for i := 0; i < len(want.Content); i += 2 {
		key := want.Content[i]
		j := 0
		for j < len(got.Content) && got.Content[j].Value != key.Value {
			j += 2
		}
		if j == len(got.Content) {
			return fmt.Sprintf("at %q: no key %q", at, key.Value)
		}
		if d := nodeDifference(got.Content[j], key, at+"/"+key.Value+" (key)"); d != "" {
			return d
		}
		if d := nodeDifference(got.Content[j+1], want.Content[i+1], at+"/"+key.Value); d != "" {
			return d
		}
	}
	return ""
}

// patchJSON6902 does to an object what kustomize's patch transformer does
// with the same JSON 6902 patch and a target that selects it: the same
// node (kinds, tags, values), the same annotations, the same refusals,
// for every JSON patch genPatches has and a few more (a patch that fails,
// one that replaces the object with a list, one that moves and copies),
// on every object of the corpus.
func TestPatchJSON6902IsKustomizesTransformer(t *testing.T) {
	var patches []string
	for _, p := range genPatches {
		if _, isJSON := json6902Of(p.Patch); isJSON {
			patches = append(patches, p.Patch)
		}
	}
	patches = append(patches,
		`[{"op": "remove", "path": "/data"}]`,
		`[{"op": "replace", "path": "/metadata/labels/app", "value": 7}]`,
		`[{"op": "add", "path": "/spec/x", "value": {"n": 1e6, "big": 9007199254740993, "s": "true"}}]`,
		`[{"op": "test", "path": "/kind", "value": "ConfigMap"}, {"op": "add", "path": "/data/t", "value": "tested"}]`,
		`[{"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/copied"}, {"op": "move", "from": "/metadata/labels/copied", "path": "/metadata/labels/moved"}]`,
		`[{"op": "replace", "path": "", "value": [1]}]`,
		`[{"op": "add", "path": "/metadata/labels", "value": {"<<": "merged"}}]`,
		"- op: add\n  path: /metadata/annotations/a\n  value: 0x1F\n",
	)
	if len(patches) < 10 {
		t.Fatalf("%d JSON patches: json6902Of takes too few", len(patches))
	}
	everything := &kustypes.Selector{}
	var done, refused int
	for _, text := range patches {
		ops, ok := json6902Of(text)
		if !ok {
			t.Fatalf("not a JSON 6902 patch: %q", text)
		}
		var c struct {
			Patch  string             `json:"patch,omitempty"  yaml:"patch,omitempty"`
			Target *kustypes.Selector `json:"target,omitempty" yaml:"target,omitempty"`
		}
		c.Patch, c.Target = text, everything
		p := builtins.NewPatchTransformerPlugin()
		if !configure(p, c) {
			t.Fatalf("kustomize refuses the patch %q", text)
		}
		for _, r := range overlayCorpus(t) {
			mine, theirs := r.DeepCopy(), r.DeepCopy()
			ok := patchJSON6902(mine, text, ops)
			_, kustomizes := transformOne(p, theirs)
			if ok != kustomizes {
				t.Errorf("patch %q: patchJSON6902 says %t, kustomize's transformer %t, on\n%s", text, ok, kustomizes, r.MustYaml())
				continue
			}
			if !ok {
				refused++
				continue
			}
			done++
			if d := nodeDifference(mine.YNode(), theirs.YNode(), ""); d != "" {
				t.Errorf("patch %q: %s, on\n%s", text, d, r.MustYaml())
			}
		}
	}
	if done < 100 || refused < 10 {
		t.Fatalf("%d patched, %d refused: want both often", done, refused)
	}
}
