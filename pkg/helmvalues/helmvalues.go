package helmvalues

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/pkg/yamlsize"
)

// Limits bound what one merge reads. Zero fields take the defaults.
type Limits struct {
	// MaxBytes bounds the bytes of all valuesFrom keys read plus
	// spec.values.
	MaxBytes int64
	// MaxNodes bounds the YAML nodes of each values document, aliases
	// expanded.
	MaxNodes int64
}

// Defaults: far above real values (a large chart's values.yaml is some
// 100 KiB), far below what would strain the controller's memory.
const (
	DefaultMaxBytes int64 = 16 << 20
	DefaultMaxNodes int64 = 200_000
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	return l
}

// Source is one ConfigMap or Secret a HelmRelease reads values from.
type Source struct {
	Kind string
	types.NamespacedName
}

// Sources returns the ConfigMaps and Secrets of hr's valuesFrom, in order
// (for a watch's index).
func Sources(hr *helmv2.HelmRelease) []Source {
	out := make([]Source, 0, len(hr.Spec.ValuesFrom))
	for _, ref := range hr.Spec.ValuesFrom {
		out = append(out, Source{Kind: ref.Kind, NamespacedName: types.NamespacedName{Namespace: hr.Namespace, Name: ref.Name}})
	}
	return out
}

// String is "<Kind>/<namespace>/<name>".
func (s Source) String() string { return s.Kind + "/" + s.Namespace + "/" + s.Name }

// MergeSecrets returns hr's user values: valuesFrom in order, read through
// r, then spec.values; the result is never nil. It also returns a Redactor
// of every scalar value read from a Secret (the whole key for a targetPath), for the values read
// before an error too: a render error (a schema check, a template's fail
// or tpl) may quote a value, and no Secret value may reach a status, an
// event or a log.
func MergeSecrets(ctx context.Context, r client.Reader, hr *helmv2.HelmRelease, limits Limits) (map[string]any, *Redactor, error) {
	red := &Redactor{}
	values, err := merge(ctx, r, hr, limits, red)
	return values, red, err
}

func merge(ctx context.Context, r client.Reader, hr *helmv2.HelmRelease, limits Limits, red *Redactor) (map[string]any, error) {
	m := &merger{limits: limits.withDefaults()}
	values := map[string]any{}
	for i, ref := range hr.Spec.ValuesFrom {
		data, secret, found, err := read(ctx, r, hr.Namespace, ref)
		if err != nil {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: %w", i, err)
		}
		if !found {
			continue
		}
		where := fmt.Sprintf("spec.valuesFrom[%d]: %s %s/%s key %q", i, ref.Kind, hr.Namespace, ref.Name, ref.GetValuesKey())
		if err := m.charge(where, len(data)); err != nil {
			return nil, err
		}
		if secret {
			red.add(string(data))
		}
		if ref.TargetPath != "" {
			if err := setPath(values, ref.TargetPath, string(data)); err != nil {
				return nil, fmt.Errorf("%s: setting targetPath %q: %w", where, ref.TargetPath, err)
			}
			continue
		}
		doc, err := m.parse(where, data, secret)
		if err != nil {
			return nil, err
		}
		if secret {
			red.addScalars(doc)
		}
		values = loader.MergeMaps(values, doc)
	}
	if hr.Spec.Values != nil && len(hr.Spec.Values.Raw) > 0 {
		if err := m.charge("spec.values", len(hr.Spec.Values.Raw)); err != nil {
			return nil, err
		}
		var doc map[string]any
		if err := json.Unmarshal(hr.Spec.Values.Raw, &doc); err != nil {
			return nil, fmt.Errorf("spec.values is not an object of values: %w", err)
		}
		values = loader.MergeMaps(values, doc)
	}
	return values, nil
}

// read returns the data of ref's key; found is false for an optional
// entry whose object or key is missing.
func read(ctx context.Context, r client.Reader, namespace string, ref helmv2.ValuesReference) (data []byte, secret, found bool, err error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	var ok bool
	switch ref.Kind {
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := r.Get(ctx, key, &cm); err != nil {
			return nil, false, false, getErr(ref, key, err)
		}
		var s string
		if s, ok = cm.Data[ref.GetValuesKey()]; ok {
			data = []byte(s)
		} else {
			data, ok = cm.BinaryData[ref.GetValuesKey()]
		}
	case "Secret":
		secret = true
		var s corev1.Secret
		if err := r.Get(ctx, key, &s); err != nil {
			return nil, true, false, getErr(ref, key, err)
		}
		data, ok = s.Data[ref.GetValuesKey()]
	default:
		return nil, false, false, fmt.Errorf("kind %q is neither ConfigMap nor Secret", ref.Kind)
	}
	if !ok {
		if ref.Optional {
			return nil, secret, false, nil
		}
		return nil, secret, false, fmt.Errorf("%s %s has no key %q; set optional: true to render without it", ref.Kind, key, ref.GetValuesKey())
	}
	return data, secret, true, nil
}

func getErr(ref helmv2.ValuesReference, key types.NamespacedName, err error) error {
	if apierrors.IsNotFound(err) {
		if ref.Optional {
			return nil
		}
		return fmt.Errorf("%s %s not found; set optional: true to render without it", ref.Kind, key)
	}
	return fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
}

// merger keeps the byte budget of one merge.
type merger struct {
	limits Limits
	bytes  int64
}

func (m *merger) charge(where string, n int) error {
	m.bytes += int64(n)
	if m.bytes > m.limits.MaxBytes {
		return &LimitError{fmt.Sprintf("%s: the values read pass the limit of %d bytes (--max-values-size)", where, m.limits.MaxBytes)}
	}
	return nil
}

// LimitError says a merge passed one of its limits.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

// parse reads a values document as Helm reads a values file, after
// counting its nodes with aliases expanded. A Secret's parse error is
// reduced to its line, which says where without quoting the content.
func (m *merger) parse(where string, data []byte, secret bool) (map[string]any, error) {
	var node yamlv3.Node
	if err := yamlv3.Unmarshal(data, &node); err != nil {
		return nil, yamlErr(where, err, secret)
	}
	if _, err := yamlsize.Expanded(&node, m.limits.MaxNodes); err != nil {
		return nil, &LimitError{fmt.Sprintf("%s: %v", where, err)}
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlErr(where, err, secret)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return doc, nil
}

var lineRE = regexp.MustCompile(`line \d+`)

func yamlErr(where string, err error, secret bool) error {
	if !secret {
		return fmt.Errorf("%s is not a YAML document of values: %w", where, err)
	}
	at := ""
	if l := lineRE.FindString(err.Error()); l != "" {
		at = " (" + l + ")"
	}
	return fmt.Errorf("%s is not a YAML document of values%s; the parser's message is not shown, as it may quote the Secret", where, at)
}

// setPath sets value at path in values with Helm's strvals parser, as
// Flux's helm-controller does, but taking the whole value: its
// backslashes, commas and braces are escaped so strvals reads them as
// part of the value, not as separators or a list.
func setPath(values map[string]any, path, value string) error {
	if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
		return strvals.ParseIntoString(path+"="+escape(value[1:len(value)-1]), values)
	}
	return strvals.ParseInto(path+"="+escape(value), values)
}

var escaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `{`, `\{`)

func escape(v string) string { return escaper.Replace(v) }

// Redactor hides Secret values in messages.
type Redactor struct{ values []string }

// minRedactLen keeps very short values (a "1", a "true") from blotting
// out unrelated words, as pkg/render's substitution redaction does.
const minRedactLen = 4

func (r *Redactor) add(v string) {
	if len(v) < minRedactLen {
		return
	}
	r.values = append(r.values, v)
	// As quoted by %q or JSON, escapes and all.
	if q := strconv.Quote(v); q[1:len(q)-1] != v {
		r.values = append(r.values, q[1:len(q)-1])
	}
	if j, err := json.Marshal(v); err == nil && string(j[1:len(j)-1]) != v {
		r.values = append(r.values, string(j[1:len(j)-1]))
	}
}

func (r *Redactor) addScalars(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			r.addScalars(c)
		}
	case []any:
		for _, c := range v {
			r.addScalars(c)
		}
	case string:
		r.add(v)
	case nil:
	default:
		r.add(fmt.Sprint(v))
	}
}

// Redact replaces every Secret value in msg with "<redacted>", longest
// first, so a value inside another is not half shown.
func (r *Redactor) Redact(msg string) string {
	if r == nil || len(r.values) == 0 {
		return msg
	}
	vs := append([]string(nil), r.values...)
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
	}
	return msg
}
