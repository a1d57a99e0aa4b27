package argoconvert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"plumb.dev/pkg/yamlsize"
)

// Bounds on the input: Argo CD's own objects are a few kilobytes.
const (
	// MaxInputBytes bounds one file (or stdin).
	MaxInputBytes = 8 << 20
	// maxNodes bounds one document after alias expansion.
	maxNodes = 1_000_000
	// maxDocuments bounds the documents of one file.
	maxDocuments = 10_000
)

// Options are the choices the input does not make.
type Options struct {
	// Interval of every produced object; Argo CD compares every three
	// minutes by default (timeout.reconciliation).
	Interval time.Duration
	// DefaultBranch is the branch a GitRepository checks out for
	// targetRevision HEAD or none: Plumb needs its name.
	DefaultBranch string
	// Namespace, when set, holds every produced namespaced Plumb object
	// instead of the Argo CD object's own namespace (argocd by default).
	Namespace string
}

// DefaultOptions are the command's defaults.
func DefaultOptions() Options {
	return Options{Interval: 3 * time.Minute, DefaultBranch: "main"}
}

// Result is the conversion of one input object.
type Result struct {
	// Kind, Namespace and Name of the Argo CD object.
	Kind, Namespace, Name string
	// Notes head the output: what did not map, what to do by hand.
	Notes []string
	// Objects are the Plumb (and Kubernetes) objects, in apply order.
	Objects []*unstructured.Unstructured
	// Err is set when the object could not be converted; Objects is
	// then empty.
	Err error
}

// FileName is the base name of the Result's file under `-o DIR`.
func (r *Result) FileName() string {
	name := strings.ToLower(r.Kind) + "-"
	if r.Namespace != "" {
		name += r.Namespace + "-"
	}
	return name + r.Name + ".yaml"
}

// Convert converts every document of data. Documents of other kinds are
// refused in their Result; an error is returned only when data is not
// YAML or exceeds the bounds.
func Convert(data []byte, opts Options) ([]Result, error) {
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("input is %d bytes, more than the %d allowed", len(data), MaxInputBytes)
	}
	if opts.Interval <= 0 || opts.DefaultBranch == "" {
		d := DefaultOptions()
		if opts.Interval <= 0 {
			opts.Interval = d.Interval
		}
		if opts.DefaultBranch == "" {
			opts.DefaultBranch = d.DefaultBranch
		}
	}
	docs, err := decodeDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []Result
	for i, doc := range docs {
		out = append(out, convertOne(i+1, doc, opts))
	}
	return out, nil
}

// decodeDocuments parses multi-document YAML into JSON-shaped maps,
// bounding each document's size after alias expansion. A List's items
// are documents of their own.
func decodeDocuments(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for n := 1; ; n++ {
		if n > maxDocuments {
			return nil, fmt.Errorf("more than %d documents", maxDocuments)
		}
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if _, err := yamlsize.Expanded(&node, maxNodes); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		var v any
		if err := node.Decode(&v); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if v == nil {
			continue
		}
		m, err := jsonShaped(v)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if kind, _ := m["kind"].(string); kind == "List" || strings.HasSuffix(kind, "List") && m["items"] != nil {
			items, _ := m["items"].([]any)
			for _, it := range items {
				if im, ok := it.(map[string]any); ok {
					docs = append(docs, im)
				}
			}
			continue
		}
		docs = append(docs, m)
	}
}

// jsonShaped turns a decoded YAML value into JSON's shapes (string keys,
// float64 and int64 numbers), refusing what JSON cannot hold.
func jsonShaped(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not a JSON-compatible object: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	return m, nil
}

// parseYAMLValue parses an embedded YAML object (Helm's values as a
// string) with the same bounds.
func parseYAMLValue(s string) (map[string]any, error) {
	v, err := parseYAMLAny(s)
	if err != nil || v == nil {
		return map[string]any{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a YAML object")
	}
	return m, nil
}

// parseYAMLAny parses an embedded YAML document into JSON's shapes.
func parseYAMLAny(s string) (any, error) {
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(s), &node); err != nil {
		return nil, err
	}
	if _, err := yamlsize.Expanded(&node, maxNodes); err != nil {
		return nil, err
	}
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not JSON-compatible: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func convertOne(index int, doc map[string]any, opts Options) Result {
	n := &notes{}
	top := newFields("", doc, n)
	apiVersion, kind := top.str("apiVersion"), top.str("kind")
	md := top.obj("metadata")
	res := Result{Kind: kind}
	if md != nil {
		res.Name, res.Namespace = md.str("name"), md.str("namespace")
	}
	if res.Name == "" {
		res.Name = fmt.Sprintf("document-%d", index)
	}
	if !strings.HasPrefix(apiVersion, "argoproj.io/") {
		res.Err = fmt.Errorf("document %d: apiVersion %q is not Argo CD's (argoproj.io/v1alpha1)", index, apiVersion)
		return res
	}
	c := &converter{opts: opts, n: n}
	var objs []runtime.Object
	switch kind {
	case "Application":
		objs = c.application(top, md)
	case "ApplicationSet":
		objs = c.applicationSet(top, md)
	case "AppProject":
		objs = c.appProject(top, md)
	default:
		res.Err = fmt.Errorf("document %d: kind %q: only Application, ApplicationSet and AppProject are converted", index, kind)
		return res
	}
	top.ignore("status", "operation")
	top.done()
	res.Notes = n.lines
	if err := n.err(); err != nil {
		res.Err = fmt.Errorf("%s %s: %w", kind, res.Name, err)
		return res
	}
	for _, o := range objs {
		u, err := toUnstructured(o)
		if err != nil {
			res.Err = fmt.Errorf("%s %s: %w", kind, res.Name, err)
			res.Objects = nil
			return res
		}
		res.Objects = append(res.Objects, u)
	}
	return res
}

// toUnstructured is o as it belongs in Git: no status, no empty
// creationTimestamp.
func toUnstructured(o runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Write prints r as YAML documents headed by its notes as comments. A
// Result that failed prints its error as a comment and no object.
func Write(w io.Writer, r Result) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "---\n# Converted from Argo CD's %s %s", r.Kind, r.Name)
	if r.Namespace != "" {
		fmt.Fprintf(&b, " (namespace %s)", r.Namespace)
	}
	b.WriteString(" by plumb convert argocd.\n")
	if r.Err != nil {
		fmt.Fprintf(&b, "# NOT CONVERTED: %s\n", oneLine(r.Err.Error()))
	}
	if len(r.Notes) > 0 {
		b.WriteString("# Notes:\n")
		for _, l := range r.Notes {
			fmt.Fprintf(&b, "# - %s\n", oneLine(l))
		}
	}
	for i, u := range r.Objects {
		data, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// oneLine keeps a comment on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
