package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/object"
)

// Action is what sync-controller has to do to an object, or, seen the other
// way, how the cluster differs from Git.
type Action string

// The actions.
const (
	// Created: the object does not exist in the cluster.
	Created Action = "Created"
	// Configured: the object exists and differs in at least one field.
	Configured Action = "Configured"
	// Unchanged: the object exists and equals the desired one.
	Unchanged Action = "Unchanged"
	// Deleted: the object exists but is no longer desired.
	Deleted Action = "Deleted"
)

// Redacted stands in for every Secret data or stringData value in a Change.
// It is a JSON string so that Before and After stay JSON text.
const Redacted = `"<redacted>"`

// Change is one field that differs. Before is the live value, After the
// desired one, both as JSON text; a side where the field is absent is empty.
type Change struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Result is the comparison of one object.
type Result struct {
	// Object is the object's id (pkg/object) as text: <kind>/<namespace>/<name>,
	// or <kind>/<name> when cluster-scoped.
	Object  string   `json:"object"`
	Action  Action   `json:"action"`
	Changes []Change `json:"changes,omitempty"`
}

// Diff compares the live object with the desired one (the server-side
// dry-run result) after normalizing both and removing the fields ig ignores.
// live == nil gives Created, desired == nil gives Deleted; neither lists
// changes. Neither input is modified.
func Diff(live, desired *unstructured.Unstructured, ig *Ignorer) Result {
	switch {
	case live == nil && desired == nil:
		return Result{Action: Unchanged}
	case live == nil:
		return Result{Object: object.IDOf(desired).String(), Action: Created}
	case desired == nil:
		return Result{Object: object.IDOf(live).String(), Action: Deleted}
	}
	l, d := Normalize(live), Normalize(desired)
	// The rules are chosen on the desired object for both sides, so a
	// label that only one side carries cannot make one side lose a field
	// the other keeps; jq expressions and field managers' fields are
	// resolved on each side, as each side has its own list order.
	for _, p := range ig.fieldsIn(desired, l, live) {
		p.Remove(l.Object)
	}
	for _, p := range ig.fieldsIn(desired, d, live) {
		p.Remove(d.Object)
	}
	w := walker{secret: isSecret(desired)}
	w.walk(nil, l.Object, d.Object, true, true)
	res := Result{Object: object.IDOf(desired).String(), Action: Unchanged, Changes: w.changes}
	if len(w.changes) > 0 {
		res.Action = Configured
	}
	return res
}

func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// segment is one step of a path: a map key or a list index.
type segment struct {
	key   string
	index int
	isIdx bool
}

type walker struct {
	secret  bool
	changes []Change
}

// walk compares a (live) with b (desired) at path; hasA/hasB say whether the
// field exists on that side.
func (w *walker) walk(path []segment, a, b any, hasA, hasB bool) {
	if w.secret && len(path) == 1 && !path[0].isIdx && (path[0].key == "data" || path[0].key == "stringData") {
		w.secretData(path, a, b)
		return
	}
	if hasA && hasB {
		am, aIsMap := a.(map[string]any)
		bm, bIsMap := b.(map[string]any)
		if aIsMap && bIsMap {
			for _, k := range unionKeys(am, bm) {
				av, okA := am[k]
				bv, okB := bm[k]
				w.walk(append(path, segment{key: k}), av, bv, okA, okB)
			}
			return
		}
		al, aIsList := a.([]any)
		bl, bIsList := b.([]any)
		if aIsList && bIsList {
			for i := 0; i < max(len(al), len(bl)); i++ {
				var av, bv any
				if i < len(al) {
					av = al[i]
				}
				if i < len(bl) {
					bv = bl[i]
				}
				w.walk(append(path, segment{index: i, isIdx: true}), av, bv, i < len(al), i < len(bl))
			}
			return
		}
	}
	if hasA && hasB && scalarEqual(a, b) {
		return
	}
	before, after := "", ""
	if hasA {
		before = jsonText(a)
	}
	if hasB {
		after = jsonText(b)
	}
	if hasA == hasB && before == after {
		return
	}
	w.changes = append(w.changes, Change{Path: formatPath(path), Before: before, After: after})
}

// secretData compares a Secret's data or stringData map key by key and
// reports a differing key with Redacted for each present value. A side that
// is absent or not a map counts as an empty map, so no value escapes
// through a whole-map change.
func (w *walker) secretData(path []segment, a, b any) {
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	for _, k := range unionKeys(am, bm) {
		av, okA := am[k]
		bv, okB := bm[k]
		if okA && okB && jsonText(av) == jsonText(bv) {
			continue
		}
		c := Change{Path: formatPath(append(path, segment{key: k}))}
		if okA {
			c.Before = Redacted
		}
		if okB {
			c.After = Redacted
		}
		w.changes = append(w.changes, c)
	}
	// A data field of the wrong type (not a map) on either side would be
	// invisible above; report it without its value.
	_, aIsMap := a.(map[string]any)
	_, bIsMap := b.(map[string]any)
	if (a != nil && !aIsMap) || (b != nil && !bIsMap) {
		c := Change{Path: formatPath(path)}
		if a != nil {
			c.Before = Redacted
		}
		if b != nil {
			c.After = Redacted
		}
		w.changes = append(w.changes, c)
	}
}

// scalarEqual is a fast path for equal leaves, which are nearly all of them;
// it never says equal for values that differ, and leaves the rest to jsonText.
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// jsonText renders a value as compact JSON; map keys come out sorted, and
// int64(1) and float64(1) both render as 1, so equal values compare equal
// whichever decoder produced them. HTML characters stay as they are: the
// text is for people, not for a web page.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return strconv.Quote(fmt.Sprint(v))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// plainKey is a map key printed after a dot; others go in brackets, quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// formatPath renders spec.template.spec.containers[0].image, with keys
// that hold dots, slashes or other characters as ["app.kubernetes.io/name"].
func formatPath(path []segment) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.isIdx:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case plainKey.MatchString(s.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		}
	}
	return b.String()
}
