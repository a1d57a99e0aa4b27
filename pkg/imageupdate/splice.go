package imageupdate

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// edit replaces one scalar's text in a file.
type edit struct {
	start, end int // byte offsets of the scalar's text, quotes included
	text       string
}

// locate finds the bytes of a single-line scalar in content from the
// line and column the parser gave it, and checks that they read back as
// the node's value: the file is only ever changed there.
func locate(content []byte, n *yaml.Node) (int, int, error) {
	where := fmt.Sprintf("line %d", n.Line)
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return 0, 0, fmt.Errorf("%s: a marker on a block scalar (| or >) is not supported", where)
	}
	lineStart := 0
	for i := 1; i < n.Line; i++ {
		j := bytes.IndexByte(content[lineStart:], '\n')
		if j < 0 {
			return 0, 0, fmt.Errorf("%s: past the end of the file", where)
		}
		lineStart += j + 1
	}
	lineEnd := len(content)
	if j := bytes.IndexByte(content[lineStart:], '\n'); j >= 0 {
		lineEnd = lineStart + j
	}
	line := content[lineStart:lineEnd]
	// The parser counts columns in characters.
	start := 0
	for c := 1; c < n.Column; c++ {
		if start >= len(line) {
			return 0, 0, fmt.Errorf("%s: past the end of the line", where)
		}
		_, size := utf8.DecodeRune(line[start:])
		start += size
	}
	rest := string(line[start:])
	var raw string
	var value string
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		end := closingQuote(rest, '"', true)
		if end < 0 {
			return 0, 0, fmt.Errorf("%s: a marked value must be on one line", where)
		}
		raw = rest[:end+1]
		v, err := strconv.Unquote(raw)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: cannot read the quoted value %s", where, raw)
		}
		value = v
	case n.Style&yaml.SingleQuotedStyle != 0:
		end := closingQuote(rest, '\'', false)
		if end < 0 {
			return 0, 0, fmt.Errorf("%s: a marked value must be on one line", where)
		}
		raw = rest[:end+1]
		value = strings.ReplaceAll(raw[1:len(raw)-1], "''", "'")
	default:
		raw = rest
		if i := commentStart(raw); i >= 0 {
			raw = raw[:i]
		}
		raw = strings.TrimRight(raw, " \t\r")
		value = raw
	}
	if value != n.Value {
		return 0, 0, fmt.Errorf("%s: a marked value must be a scalar on one line (found %q, parsed %q)", where, raw, n.Value)
	}
	return lineStart + start, lineStart + start + len(raw), nil
}

// closingQuote returns the index of the quote closing s (which opens
// with q), or -1 when the line ends first. In double quotes a backslash
// escapes the next byte; in single quotes a doubled quote stands for one.
func closingQuote(s string, q byte, backslash bool) int {
	for i := 1; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\':
			i++
		case s[i] == q:
			if !backslash && i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i
		}
	}
	return -1
}

// commentStart is where a comment starts after a plain scalar: a # after
// a space or a tab.
func commentStart(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return i
		}
	}
	return -1
}

// render writes v in the style of the scalar it replaces. A plain scalar
// stays plain when v reads back as the same string with the same type
// (a tag 1.10 stays a number if 1.9 was one, a name never turns into a
// boolean); otherwise v is double-quoted.
func render(n *yaml.Node, v string) string {
	switch {
	case n.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(v, "\n\r"):
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return strconv.Quote(v)
	}
	if plainReadsBack(v, n.Tag) {
		return v
	}
	return strconv.Quote(v)
}

func plainReadsBack(v, tag string) bool {
	if v == "" || strings.ContainsAny(v, "\n\r#") {
		return false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+v), &doc); err != nil {
		return false
	}
	if len(doc.Content) != 1 || len(doc.Content[0].Content) != 2 {
		return false
	}
	got := doc.Content[0].Content[1]
	return got.Kind == yaml.ScalarNode && got.Style == 0 && got.Value == v && got.Tag == tag
}

// apply makes the edits, which do not overlap, on a copy of content.
func apply(content []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(content)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return out
}
