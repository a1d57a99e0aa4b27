package diff

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"plumb.dev/pkg/panics"
)

// Bounds of one jq path expression's evaluation on one object. The
// expressions come from a tenant's spec, and jq can loop or build large
// values: each evaluation stops at its deadline and at maxJQPaths fields.
const (
	jqDeadline = 100 * time.Millisecond
	maxJQPaths = 1000
)

// jqPath is a compiled jq path expression of an ignore rule.
type jqPath struct {
	source string
	code   *gojq.Code
}

// compileJQPath compiles expr as the argument of jq's path(), so that it
// yields the paths of the fields it selects rather than their values, and
// tries it on an empty object: an expression that is no path expression
// (.spec | tostring) fails there with jq's "invalid path", when the spec
// is read rather than on the first object. Other errors on an empty object
// (iterating over null) say nothing about the expression.
func compileJQPath(expr string) (*jqPath, error) {
	q, err := gojq.Parse("path(" + expr + ")")
	if err != nil {
		return nil, fmt.Errorf("jq expression %q does not parse: %v", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq expression %q does not compile: %v", expr, err)
	}
	j := &jqPath{source: expr, code: code}
	if _, err := j.pointers(map[string]any{}); err != nil && strings.HasPrefix(err.Error(), "invalid path") {
		return nil, fmt.Errorf("jq expression %q is not a path expression: %v", expr, err)
	}
	return j, nil
}

// pointers evaluates the expression on doc (an object's content in
// gojq's types: jqValue) and returns the paths it yields as pointers. An error means the expression
// failed on this object (a type error, the deadline, too many fields): the
// rule then ignores nothing here.
func (j *jqPath) pointers(doc any) (out []Pointer, err error) {
	defer panics.Recover(&err, "evaluating a jq path expression")
	ctx, cancel := context.WithTimeout(context.Background(), jqDeadline)
	defer cancel()
	iter := j.code.RunWithContext(ctx, doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := v.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return out, nil
			}
			return nil, err
		}
		path, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("path() gave %T", v)
		}
		p, err := pointerOfJQPath(path)
		if err != nil {
			return nil, err
		}
		if len(out) == maxJQPaths {
			return nil, fmt.Errorf("selects more than %d fields", maxJQPaths)
		}
		out = append(out, p)
	}
}

// pointerOfJQPath turns one of path()'s results (keys and indices) into a
// pointer. Slices (.[1:3]) have no pointer and are refused.
func pointerOfJQPath(path []any) (Pointer, error) {
	p := make(Pointer, 0, len(path))
	for _, step := range path {
		switch s := step.(type) {
		case string:
			p = append(p, s)
		case int:
			if s < 0 {
				return nil, fmt.Errorf("a negative index (%d) selects no field", s)
			}
			p = append(p, strconv.Itoa(s))
		case float64:
			if s < 0 || s != float64(int(s)) {
				return nil, fmt.Errorf("index %v selects no field", s)
			}
			p = append(p, strconv.Itoa(int(s)))
		default:
			return nil, fmt.Errorf("a path step %v (%T) is no key or index", step, step)
		}
	}
	return p, nil
}

// jqValue copies an unstructured object's content into the types gojq
// takes: its integers are int64, which gojq does not accept.
func jqValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jqValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jqValue(e)
		}
		return out
	case int64:
		return int(x)
	case int32:
		return int(x)
	default:
		return v
	}
}
