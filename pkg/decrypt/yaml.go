package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadYAML reads the documents of a YAML file, with their comments, as
// the library's YAML store does: every document a mapping (or empty), the
// first one also decodable into a Go map (which is where yaml's own limits
// on aliases apply).
func loadYAML(in []byte, b *budget) ([]branch, error) {
	if len(in) > 0 {
		if err := yaml.NewDecoder(bytes.NewReader(in)).Decode(make(map[string]any)); err != nil {
			return nil, err
		}
	}
	d := yaml.NewDecoder(bytes.NewReader(in))
	var docs []branch
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		br, err := b.yamlMapping(&doc, make(branch, 0), false, 0)
		if err != nil {
			return nil, err
		}
		docs = append(docs, br)
	}
}

// appendComments adds each line of a yaml comment ("# a\n# b") as a
// comment item, without its '#'.
func appendComments(br branch, text string, inline bool) branch {
	for _, c := range commentLines(text) {
		br = append(br, item{key: comment{Value: c, Inline: inline}})
	}
	return br
}

func appendListComments(list []any, text string, inline bool) []any {
	for _, c := range commentLines(text) {
		list = append(list, comment{Value: c, Inline: inline})
	}
	return list
}

func commentLines(text string) []string {
	var out []string
	if text == "" {
		return nil
	}
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			out = append(out, line[1:])
		}
	}
	return out
}

func (b *budget) yamlValue(n *yaml.Node, commentsDone bool, depth int) (any, error) {
	if err := b.take(depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.SequenceNode:
		var list []any
		if !commentsDone {
			list = appendListComments(list, n.HeadComment, false)
			list = appendListComments(list, n.LineComment, false)
		}
		for _, c := range n.Content {
			list = appendListComments(list, c.HeadComment, false)
			list = appendListComments(list, c.LineComment, true)
			v, err := b.yamlValue(c, true, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			list = appendListComments(list, c.FootComment, false)
		}
		if !commentsDone {
			list = appendListComments(list, n.FootComment, false)
		}
		return list, nil
	case yaml.MappingNode:
		return b.yamlMapping(n, make(branch, 0), commentsDone, depth)
	case yaml.ScalarNode:
		var v any
		_ = n.Decode(&v) // as the library: a scalar that does not decode is nil
		return v, nil
	case yaml.AliasNode:
		return b.yamlValue(n.Alias, false, depth+1)
	}
	return nil, nil
}

func (b *budget) yamlMapping(n *yaml.Node, br branch, commentsDone bool, depth int) (branch, error) {
	if err := b.take(depth); err != nil {
		return nil, err
	}
	if !commentsDone {
		br = appendComments(br, n.HeadComment, false)
		br = appendComments(br, n.LineComment, false)
	}
	var err error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if br, err = b.yamlMapping(c, br, false, depth+1); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, fmt.Errorf("a YAML document that is a list is not supported")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			br = appendComments(br, k.HeadComment, false)
			br = appendComments(br, k.LineComment, false)
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				br = appendComments(br, v.HeadComment, false)
				br = appendComments(br, v.LineComment, true)
			}
			var key any
			_ = k.Decode(&key)
			val, err := b.yamlValue(v, scalar, depth+1)
			if err != nil {
				return nil, err
			}
			br = append(br, item{key: key, value: val})
			if scalar {
				br = appendComments(br, v.FootComment, false)
			}
			br = appendComments(br, k.FootComment, false)
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return br, nil
		}
		return nil, fmt.Errorf("a YAML document that is a single value is not supported")
	case yaml.AliasNode:
		if br, err = b.yamlMapping(n.Alias, br, false, depth+1); err != nil {
			return nil, err
		}
	}
	if !commentsDone {
		br = appendComments(br, n.FootComment, false)
	}
	return br, nil
}

// emitYAML prints the documents as the library's YAML store does: yaml.v3
// with an indent of 4, comments placed back on the keys and items they
// came with.
func emitYAML(docs []branch) ([]byte, error) {
	var out bytes.Buffer
	e := yaml.NewEncoder(&out)
	e.SetIndent(4)
	for _, br := range docs {
		mapping := &yaml.Node{Kind: yaml.MappingNode}
		yamlMappingNode(br, mapping)
		if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping}}); err != nil {
			return nil, fmt.Errorf("printing YAML: %v", err)
		}
	}
	_ = e.Close()
	return out.Bytes(), nil
}

func yamlNode(v any) *yaml.Node {
	switch v := v.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		yamlMappingNode(v, n)
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		yamlSequenceNode(v, n)
		return n
	}
	n := &yaml.Node{}
	_ = n.Encode(v)
	return n
}

// headComment puts comment lines before a node's own head comment;
// footComment and lineComment after its own.
func headComment(n *yaml.Node, lines []string) {
	if len(lines) == 0 {
		return
	}
	c := "#" + strings.Join(lines, "\n#")
	if n.HeadComment != "" {
		c += "\n" + n.HeadComment
	}
	n.HeadComment = c
}

func footComment(n *yaml.Node, lines []string) {
	if len(lines) > 0 {
		n.FootComment = joinComment(n.FootComment, "#"+strings.Join(lines, "\n#"))
	}
}

func lineComment(n *yaml.Node, lines []string) {
	if len(lines) > 0 {
		n.LineComment = joinComment(n.LineComment, "#"+strings.Join(lines, "\n#"))
	}
}

func joinComment(old, c string) string {
	if old == "" {
		return c
	}
	return old + "\n" + c
}

// yamlEntry is one item of a list or map about to be printed, or a
// comment between them. Head comments go on head, inline ones on line.
type yamlEntry struct {
	comment    *comment
	head, line *yaml.Node
	nodes      []*yaml.Node
}

// placeComments fills n with the entries' nodes and puts each run of
// comments where the library puts it: before the first entry on n itself,
// before another on the entry's head node (inline ones on its line node),
// after the last on the last entry's head node.
func placeComments(n *yaml.Node, entries []yamlEntry) {
	var head, inline []string
	var last *yaml.Node
	for _, e := range entries {
		if c := e.comment; c != nil {
			if c.Inline {
				inline = append(inline, c.Value)
			} else {
				head = append(head, c.Value)
			}
			continue
		}
		if last == nil {
			headComment(n, head)
			head = nil
		}
		headComment(e.head, head)
		lineComment(e.line, inline)
		head, inline = nil, nil
		n.Content = append(n.Content, e.nodes...)
		last = e.head
	}
	head = append(head, inline...)
	if last == nil {
		headComment(n, head)
	} else {
		footComment(last, head)
	}
}

func yamlSequenceNode(list []any, n *yaml.Node) {
	entries := make([]yamlEntry, 0, len(list))
	for _, v := range list {
		if c, ok := v.(comment); ok {
			entries = append(entries, yamlEntry{comment: &c})
			continue
		}
		child := yamlNode(v)
		entries = append(entries, yamlEntry{head: child, line: child, nodes: []*yaml.Node{child}})
	}
	placeComments(n, entries)
}

func yamlMappingNode(br branch, n *yaml.Node) {
	entries := make([]yamlEntry, 0, len(br))
	for _, it := range br {
		if c, ok := it.key.(comment); ok {
			entries = append(entries, yamlEntry{comment: &c})
			continue
		}
		k := &yaml.Node{}
		_ = k.Encode(it.key)
		v := yamlNode(it.value)
		entries = append(entries, yamlEntry{head: k, line: v, nodes: []*yaml.Node{k, v}})
	}
	placeComments(n, entries)
}
