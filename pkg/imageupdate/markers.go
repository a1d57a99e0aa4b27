package imageupdate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// markerKey is the key of a marker's JSON object, and the token a file
// must hold to be parsed at all.
const markerKey = "$imagepolicy"

var markerToken = []byte(`"` + markerKey + `"`)

// marked is one field carrying a marker, found in a parsed file.
type marked struct {
	node   *yaml.Node
	setter string
	obj    ObjectIdentifier
}

// setterOf reads a line comment as a marker: a JSON object with the
// "$imagepolicy" key, whose value names the setter. Any other comment
// is not a marker.
func setterOf(comment string) (string, bool) {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if !strings.HasPrefix(s, "{") || !strings.Contains(s, markerKey) {
		return "", false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", false
	}
	name, ok := m[markerKey].(string)
	return name, ok && name != ""
}

// valueFor is the value a setter gives a field, from the policies' refs
// keyed by "namespace:name": the full reference for "ns:name", one part
// for "ns:name:tag", ":name" or ":digest". ok is false for a setter no
// policy defines (the field is left alone, as Flux does) and for a part
// the policy does not know (a digest without digest reflection): writing
// an empty value would break the image.
func valueFor(setter string, refs map[string]ImageRef) (string, bool) {
	parts := strings.Split(setter, ":")
	var ref ImageRef
	var ok bool
	switch len(parts) {
	case 2:
		ref, ok = refs[setter]
		if !ok || ref.Name == "" || ref.Tag == "" {
			return "", false
		}
		return ref.String(), true
	case 3:
		ref, ok = refs[parts[0]+":"+parts[1]]
		if !ok {
			return "", false
		}
		var v string
		switch parts[2] {
		case "tag":
			v = ref.Tag
		case "name":
			v = ref.Name
		case "digest":
			v = ref.Digest
		}
		return v, v != ""
	}
	return "", false
}

// findMarked parses a file's YAML documents and returns the fields that
// carry a marker. A file that does not parse is reported as such
// (errNotYAML): it is left untouched.
func findMarked(content []byte) ([]marked, error) {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var out []marked
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNotYAML, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			// Not an object (a list, a scalar, an empty document):
			// nothing of it is changed.
			continue
		}
		root := doc.Content[0]
		obj := identify(root)
		walkNode(root, func(n *yaml.Node, comment string) {
			if setter, ok := setterOf(comment); ok {
				out = append(out, marked{node: n, setter: setter, obj: obj})
			}
		})
	}
}

var errNotYAML = errors.New("not YAML")

// walkNode calls f for every scalar that is a mapping's value or a
// sequence's item, with its line comment: on the value, or on the key
// when the parser put it there.
func walkNode(n *yaml.Node, f func(*yaml.Node, string)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.ScalarNode {
				f(v, cmpOr(v.LineComment, k.LineComment))
				continue
			}
			walkNode(v, f)
		}
	case yaml.SequenceNode:
		for _, v := range n.Content {
			if v.Kind == yaml.ScalarNode {
				f(v, v.LineComment)
				continue
			}
			walkNode(v, f)
		}
	}
}

// identify reads an object's apiVersion, kind, metadata.name and
// metadata.namespace.
func identify(root *yaml.Node) ObjectIdentifier {
	get := func(n *yaml.Node, key string) *yaml.Node {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
		return nil
	}
	str := func(n *yaml.Node) string {
		if n == nil || n.Kind != yaml.ScalarNode {
			return ""
		}
		return n.Value
	}
	meta := get(root, "metadata")
	return ObjectIdentifier{
		APIVersion: str(get(root, "apiVersion")),
		Kind:       str(get(root, "kind")),
		Name:       str(get(meta, "name")),
		Namespace:  str(get(meta, "namespace")),
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
