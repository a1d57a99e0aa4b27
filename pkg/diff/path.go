package diff

import (
	"strconv"
	"strings"
)

// PathElement is one step of a Change's Path: a field name or map key, or
// a list index.
type PathElement struct {
	Key     string
	Index   int
	IsIndex bool
}

// ParsePath splits a Change's Path (spec.template.spec.containers[0].image,
// metadata.labels["app.kubernetes.io/name"]) into its elements, the inverse
// of how Diff renders it. A malformed rest is returned as one key.
func ParsePath(path string) []PathElement {
	var out []PathElement
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case strings.HasPrefix(path, `["`):
			q, err := strconv.QuotedPrefix(path[1:])
			if err != nil {
				return append(out, PathElement{Key: path})
			}
			key, _ := strconv.Unquote(q)
			out = append(out, PathElement{Key: key})
			path = strings.TrimPrefix(path[1+len(q):], "]")
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil {
				return append(out, PathElement{Key: path})
			}
			out = append(out, PathElement{Index: i, IsIndex: true})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out = append(out, PathElement{Key: path[:end]})
			path = path[end:]
		}
	}
	return out
}

// PointerOf returns the JSON pointer (RFC 6901, as spec.ignore takes it) of
// a Change's Path: spec.replicas gives /spec/replicas.
func PointerOf(path string) string {
	var b strings.Builder
	for _, e := range ParsePath(path) {
		tok := e.Key
		if e.IsIndex {
			tok = strconv.Itoa(e.Index)
		}
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
