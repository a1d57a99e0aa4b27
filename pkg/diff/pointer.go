package diff

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer: its reference tokens, unescaped.
type Pointer []string

// ParsePointer parses an RFC 6901 JSON pointer such as /spec/replicas or
// /metadata/annotations/example.com~1owner (~1 stands for '/', ~0 for '~').
// The empty pointer, which would select the whole object, is refused: an
// ignore rule for a whole object is better written as no object at all.
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return nil, fmt.Errorf("empty JSON pointer: it would select the whole object")
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q must start with '/'", s)
	}
	parts := strings.Split(s[1:], "/")
	out := make(Pointer, len(parts))
	for i, p := range parts {
		tok, err := unescapeToken(p)
		if err != nil {
			return nil, fmt.Errorf("JSON pointer %q: %w", s, err)
		}
		out[i] = tok
	}
	return out, nil
}

func unescapeToken(p string) (string, error) {
	if !strings.Contains(p, "~") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '~' {
			b.WriteByte(p[i])
			continue
		}
		if i+1 >= len(p) {
			return "", fmt.Errorf("'~' at the end of token %q must be followed by 0 or 1", p)
		}
		switch p[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("invalid escape '~%c' in token %q: only ~0 and ~1 are allowed", p[i+1], p)
		}
		i++
	}
	return b.String(), nil
}

// String renders the pointer in RFC 6901 form; ParsePointer(p.String())
// gives p back.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// arrayIndex reads a token as an index into a list of length n: decimal
// without leading zeros, as RFC 6901 requires; "-" (past the end) and
// anything out of range select nothing.
func arrayIndex(tok string, n int) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= n {
		return 0, false
	}
	return i, true
}

// Remove deletes the value the pointer selects from doc, if there is one,
// and reports whether it did. Then, whether or not something was removed,
// the maps and lists along the pointer that are (now) empty are removed
// from their parent maps, innermost first: ignoring the only annotation
// must not leave "annotations: {}" on one side of a diff and nothing on
// the other. A list element's removal shifts the elements after it, the
// same on both sides of a diff.
func (p Pointer) Remove(doc map[string]any) bool {
	if len(p) == 0 || doc == nil {
		return false
	}
	removed, _ := removeAt(doc, p)
	for k := len(p) - 1; k >= 1; k-- {
		parent, ok := lookup(doc, p[:k-1]).(map[string]any)
		if !ok {
			continue // not there on this side, or inside a list
		}
		child, ok := parent[p[k-1]]
		if !ok {
			continue
		}
		if !isEmptyContainer(child) {
			break
		}
		delete(parent, p[k-1])
	}
	return removed
}

// lookup returns the value at p in doc, or nil.
func lookup(doc any, p Pointer) any {
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, ok := arrayIndex(tok, len(c))
			if !ok {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// removeAt removes p from container (a map or a list) and returns whether it
// removed something and the container's new value (a list shrinks).
func removeAt(container any, p Pointer) (bool, any) {
	tok := p[0]
	switch c := container.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return false, c
		}
		if len(p) == 1 {
			delete(c, tok)
			return true, c
		}
		removed, newChild := removeAt(child, p[1:])
		if removed {
			c[tok] = newChild
		}
		return removed, c
	case []any:
		i, ok := arrayIndex(tok, len(c))
		if !ok {
			return false, c
		}
		if len(p) == 1 {
			return true, append(c[:i:i], c[i+1:]...)
		}
		removed, newChild := removeAt(c[i], p[1:])
		if removed {
			c[i] = newChild
		}
		return removed, c
	}
	return false, container
}

func isEmptyContainer(v any) bool {
	switch c := v.(type) {
	case map[string]any:
		return len(c) == 0
	case []any:
		return len(c) == 0
	}
	return false
}
