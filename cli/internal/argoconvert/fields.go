package argoconvert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// fields walks one object of the input. Each read marks its key as used;
// done reports every key nobody read as not converted, so a field the
// converter does not know (a newer Argo CD field, a typo) is named in the
// output instead of disappearing.
type fields struct {
	path string
	m    map[string]any
	used map[string]bool
	n    *notes
}

func newFields(path string, m map[string]any, n *notes) *fields {
	return &fields{path: path, m: m, used: map[string]bool{}, n: n}
}

// at is the path of key k, for notes and errors.
func (f *fields) at(k string) string {
	if f.path == "" {
		return k
	}
	return f.path + "." + k
}

// has reports whether k is set (and marks nothing).
func (f *fields) has(k string) bool {
	v, ok := f.m[k]
	return ok && v != nil
}

func (f *fields) raw(k string) any {
	f.used[k] = true
	return f.m[k]
}

// str reads a string; a number or a bool is taken in its YAML spelling,
// as Argo CD's API server would refuse it anyway.
func (f *fields) str(k string) string {
	switch v := f.raw(k).(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		f.n.errf("%s: want a string, got %T", f.at(k), v)
		return ""
	}
}

// boolean reads a bool; a string "true"/"false" is accepted as Argo CD's
// CRD would not, because templates write them so.
func (f *fields) boolean(k string) bool {
	switch v := f.raw(k).(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.n.errf("%s: want true or false, got %q", f.at(k), v)
		}
		return b
	default:
		f.n.errf("%s: want true or false, got %T", f.at(k), v)
		return false
	}
}

// integer reads an integer; ok is false when k is unset.
func (f *fields) integer(k string) (int64, bool) {
	switch v := f.raw(k).(type) {
	case nil:
		return 0, false
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case string:
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i, true
		}
	}
	f.n.errf("%s: want an integer, got %v", f.at(k), f.m[k])
	return 0, false
}

// obj reads a nested object; nil when k is unset.
func (f *fields) obj(k string) *fields {
	switch v := f.raw(k).(type) {
	case nil:
		return nil
	case map[string]any:
		return newFields(f.at(k), v, f.n)
	default:
		f.n.errf("%s: want an object, got %T", f.at(k), v)
		return nil
	}
}

// objs reads a list of objects.
func (f *fields) objs(k string) []*fields {
	var out []*fields
	for i, v := range f.list(k) {
		m, ok := v.(map[string]any)
		if !ok {
			f.n.errf("%s[%d]: want an object, got %T", f.at(k), i, v)
			continue
		}
		out = append(out, newFields(fmt.Sprintf("%s[%d]", f.at(k), i), m, f.n))
	}
	return out
}

func (f *fields) list(k string) []any {
	switch v := f.raw(k).(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		f.n.errf("%s: want a list, got %T", f.at(k), v)
		return nil
	}
}

func (f *fields) strs(k string) []string {
	var out []string
	for i, v := range f.list(k) {
		s, ok := v.(string)
		if !ok {
			f.n.errf("%s[%d]: want a string, got %T", f.at(k), i, v)
			continue
		}
		out = append(out, s)
	}
	return out
}

// strMap reads a map of strings (labels, annotations, values).
func (f *fields) strMap(k string) map[string]string {
	o := f.obj(k)
	if o == nil {
		return nil
	}
	out := map[string]string{}
	for key := range o.m {
		out[key] = o.str(key)
	}
	return out
}

// skip marks k as read and, when it is set, notes why it is not converted.
func (f *fields) skip(k, why string) {
	if f.has(k) {
		f.n.addf("%s: not converted: %s", f.at(k), why)
	}
	f.used[k] = true
}

// ignore marks k as read without a note: a field with no meaning for
// Plumb's objects (status, Argo CD's bookkeeping).
func (f *fields) ignore(keys ...string) {
	for _, k := range keys {
		f.used[k] = true
	}
}

// done notes every key that was not read.
func (f *fields) done() {
	if f == nil {
		return
	}
	var left []string
	for k := range f.m {
		if !f.used[k] {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	for _, k := range left {
		f.n.addf("%s: not converted: Plumb's converter does not know this field", f.at(k))
	}
}

// notes collects what the output's header says, and the errors that
// stop a conversion.
type notes struct {
	lines []string
	errs  []string
}

func (n *notes) addf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	for _, l := range n.lines {
		if l == line {
			return
		}
	}
	n.lines = append(n.lines, line)
}

func (n *notes) errf(format string, args ...any) {
	n.errs = append(n.errs, fmt.Sprintf(format, args...))
}

func (n *notes) err() error {
	if len(n.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(n.errs, "; "))
}
