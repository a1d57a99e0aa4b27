package health

import (
	"encoding/json"
	"math"
	"strconv"
)

// object reads fields of an unstructured object leniently: a missing or
// mistyped field reads as absent instead of failing, because health is
// computed on whatever the API server or a test wrote.
type object struct {
	m map[string]any
}

func (o object) get(path ...string) (any, bool) {
	var cur any = o.m
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func (o object) str(path ...string) string {
	v, _ := o.get(path...)
	s, _ := v.(string)
	return s
}

func (o object) boolean(path ...string) bool {
	v, _ := o.get(path...)
	b, _ := v.(bool)
	return b
}

// int reads an integer field; JSON numbers arrive as int64 from the API
// machinery but as float64 from a plain json.Unmarshal.
func (o object) int(path ...string) (int64, bool) {
	v, ok := o.get(path...)
	if !ok {
		return 0, false
	}
	return toInt(v)
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n != math.Trunc(n) {
			return 0, false
		}
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// intOr reads an integer field or returns def when it is absent.
func (o object) intOr(def int64, path ...string) int64 {
	if n, ok := o.int(path...); ok {
		return n
	}
	return def
}

func (o object) slice(path ...string) []any {
	v, _ := o.get(path...)
	s, _ := v.([]any)
	return s
}

func (o object) generation() int64 { return o.intOr(0, "metadata", "generation") }

// observedStale reports whether the object's controller has not yet seen its
// newest spec: status.observedGeneration is behind metadata.generation. An
// object with a generation but no observedGeneration has not been observed.
func (o object) observedStale() bool {
	gen, hasGen := o.int("metadata", "generation")
	if !hasGen {
		return false
	}
	obs, ok := o.int("status", "observedGeneration")
	return !ok || obs < gen
}

// condition is one entry of status.conditions.
type condition struct {
	Type, Status, Reason, Message string
	ObservedGeneration            int64
	hasObservedGeneration         bool
}

func parseConditions(list []any) []condition {
	out := make([]condition, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		c := condition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if v, ok := m["observedGeneration"]; ok {
			c.ObservedGeneration, c.hasObservedGeneration = toInt(v)
		}
		out = append(out, c)
	}
	return out
}

func (o object) conditions() []condition { return parseConditions(o.slice("status", "conditions")) }

func findCondition(conds []condition, t string) (condition, bool) {
	for _, c := range conds {
		if c.Type == t {
			return c, true
		}
	}
	return condition{}, false
}

// why joins a condition's reason and message for a Result message.
func (c condition) why() string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Message != "":
		return c.Message
	case c.Reason != "":
		return c.Reason
	}
	return c.Type + "=" + c.Status
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
