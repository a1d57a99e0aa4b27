package objectset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/textbudget"
	"plumb.dev/pkg/yamlsize"
)

// Bounds of rendering a set, per element and in all.
const (
	// MaxElementBytes bounds the text the template gives for one element.
	MaxElementBytes = 256 << 10
	// MaxDocuments bounds the YAML documents of one element.
	MaxDocuments = 20
	// MaxObjects bounds the objects of a set.
	MaxObjects = 2000
	// maxDocumentNodes bounds one document's YAML nodes after alias
	// expansion.
	maxDocumentNodes = 100_000
	// execTimeout bounds one element's execution.
	execTimeout = time.Second
	// maxRunning bounds the executions running at once, those left
	// behind by the timeout among them.
	maxRunning = 4
)

var runner = textbudget.NewRunner(maxRunning, execTimeout)

// parseTemplate parses spec.template with pkg/textbudget's functions. A
// missing field is an error naming it, rather than "<no value>" in an
// object; {{define}} and {{template}} are refused, as in Alert
// templates: one template is all a set has.
func parseTemplate(text string) (*template.Template, error) {
	t, err := template.New("template").Option("missingkey=error").Funcs(textbudget.Funcs).Parse(text)
	if err != nil {
		return nil, textbudget.CleanError(err)
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New("{{define}} and {{block}} are not supported: write one template")
	}
	return t, nil
}

// renderElement executes the template for one element and decodes the
// YAML documents it gives.
func renderElement(t *template.Template, el Element) (string, []*unstructured.Unstructured, error) {
	out, err := runner.Execute(t, el, MaxElementBytes, textbudget.MaxBuiltBytes)
	if err != nil {
		return "", nil, err
	}
	objs, err := decodeDocuments(out)
	return out, objs, err
}

// decodeDocuments reads a YAML stream of objects, skipping empty
// documents: at most MaxDocuments, each within maxDocumentNodes after
// alias expansion, each with apiVersion, kind and metadata.name.
func decodeDocuments(text string) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if i > MaxDocuments {
			return nil, fmt.Errorf("more than %d YAML documents", MaxDocuments)
		}
		if _, err := yamlsize.Expanded(&n, maxDocumentNodes); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if v == nil {
			continue
		}
		j, err := jsonValue(v)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		m, ok := j.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d is no object", i)
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are required", i)
		}
		objs = append(objs, obj)
	}
}

// configKinds are the plain namespaced objects a set may write besides
// Plumb's kinds: configuration its objects read (a HelmRelease's
// valuesFrom, a Kustomization's substituteFrom). Secrets are not among
// them: a template's text shows in the set's spec for anyone who reads it.
var configKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true,
}

// admit refuses an object the set may not write, and fills in the set's
// namespace where the object names none. Under noCrossNamespace, a
// namespace or targetNamespace anywhere in the object other than the
// set's is refused too: a sourceRef, a dependsOn, a chart's sourceRef, a
// Kustomization's target.
func admit(set *setv1.ObjectSet, obj *unstructured.Unstructured, noCrossNamespace bool) error {
	gvk := obj.GroupVersionKind()
	if !allowedKind(gvk) {
		return fmt.Errorf("%s %s: an ObjectSet writes only Plumb's namespaced kinds and ConfigMaps", gvk.Kind, obj.GetName())
	}
	switch ns := obj.GetNamespace(); ns {
	case "":
		obj.SetNamespace(set.Namespace)
	case set.Namespace:
	default:
		return fmt.Errorf("%s %s: namespace %s is not the set's namespace %s", gvk.Kind, obj.GetName(), ns, set.Namespace)
	}
	if noCrossNamespace {
		if path, ns := foreignNamespace(obj.Object, set.Namespace, ""); path != "" {
			return fmt.Errorf("%s %s: %s names namespace %s, and sync-controller runs with --no-cross-namespace-refs",
				gvk.Kind, obj.GetName(), path, ns)
		}
	}
	return nil
}

// allowedKind reports whether gvk is one of Plumb's kinds (all of them
// namespaced) or a configKind.
func allowedKind(gvk schema.GroupVersionKind) bool {
	if configKinds[gvk.GroupKind()] && gvk.Version == "v1" {
		return true
	}
	k, ok := kinds.Lookup(gvk.Kind)
	return ok && k.GVK.Group == gvk.Group
}

// foreignNamespace finds a namespace or targetNamespace field (outside
// metadata, which admit judged) whose value is not ns, and returns its
// path and value.
func foreignNamespace(v any, ns, at string) (string, string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			p := at + "." + k
			if p == ".metadata" {
				continue
			}
			if s, ok := c.(string); ok && (k == "namespace" || k == "targetNamespace") && s != "" && s != ns {
				return strings.TrimPrefix(p, "."), s
			}
			if path, val := foreignNamespace(c, ns, p); path != "" {
				return path, val
			}
		}
	case []any:
		for i, c := range v {
			if path, val := foreignNamespace(c, ns, fmt.Sprintf("%s[%d]", at, i)); path != "" {
				return path, val
			}
		}
	}
	return "", ""
}

// rendered is what the template gave for every element: the objects in
// element order, and the whole text (the digest the prune guard's
// confirmation names).
type rendered struct {
	objects []*unstructured.Unstructured
	text    bytes.Buffer
	// elements are the first MaxElementDetails elements with the objects
	// each gave, for status.elementDetails.
	elements []setv1.ElementStatus
}

// renderAll renders every element and admits what it gives. An object
// given twice (by two elements, or one element twice) is an error: the
// two would overwrite each other on every reconcile.
func renderAll(set *setv1.ObjectSet, els []Element, noCrossNamespace bool) (*rendered, error) {
	t, err := parseTemplate(set.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("spec.template: %w", err)
	}
	out := &rendered{}
	seen := map[object.ID]int{}
	for i, el := range els {
		text, objs, err := renderElement(t, el)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out.text.WriteString(text)
		out.text.WriteString("\n---\n")
		var detail *setv1.ElementStatus
		if i < setv1.MaxElementDetails {
			out.elements = append(out.elements, setv1.ElementStatus{Values: elementValues(el)})
			detail = &out.elements[len(out.elements)-1]
		}
		for _, o := range objs {
			if err := admit(set, o, noCrossNamespace); err != nil {
				return nil, &refusedError{fmt.Errorf("element %d: %w", i, err)}
			}
			id := object.IDOf(o)
			if j, ok := seen[id]; ok {
				return nil, &refusedError{fmt.Errorf("elements %d and %d both give %s", j, i, id)}
			}
			seen[id] = i
			out.objects = append(out.objects, o)
			if detail != nil {
				detail.Objects = append(detail.Objects, id.String())
			}
			if len(out.objects) > MaxObjects {
				return nil, fmt.Errorf("the template gives more than %d objects", MaxObjects)
			}
		}
	}
	return out, nil
}

// refusedError is an object the set may not write: only a change of the
// spec or of the generators' input helps.
type refusedError struct{ error }

func (e *refusedError) Unwrap() error { return e.error }

// elementValues is an element as compact JSON (encoding/json sorts the
// keys), cut at MaxElementValuesBytes on a character boundary: enough to
// tell the elements apart in a status, never a whole pull request body.
func elementValues(el Element) string {
	b, err := json.Marshal(el)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) <= setv1.MaxElementValuesBytes {
		return string(b)
	}
	cut := setv1.MaxElementValuesBytes
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
