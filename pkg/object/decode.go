package object

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// DecodeManifests reads a rendered manifests artifact (a multi-document
// YAML stream, or a stream of JSON objects) into objects, skipping empty
// documents. Each object must have apiVersion, kind and a name.
//
// The objects are what apimachinery's YAMLOrJSONDecoder gives for the same
// bytes (the YAML parsed by go-yaml v2, then through JSON text into maps):
// every number a float64, as encoding/json decodes into interface{}, and
// map keys and strings as JSON text carries them. The apply body, the
// hashes of pkg/manage and the comparisons with the live object all see
// those types. A JSON stream is read by that decoder itself; in a YAML
// stream only the JSON text between the parse and the maps is gone: the
// YAML parser's values are converted in place (jsonValue).
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	var d manifestDecoder
	var err error
	if _, _, isJSON := utilyaml.GuessJSONStream(bytes.NewReader(data), jsonPeek); isJSON {
		err = d.jsonStream(data)
	} else {
		err = d.yamlStream(data)
	}
	if err != nil {
		return nil, err
	}
	return d.objs, nil
}

// manifestDecoder collects the objects of one artifact, counting documents
// for the errors.
type manifestDecoder struct {
	objs []*unstructured.Unstructured
	docs int
}

// jsonPeek is how far a stream is looked into for the brace that makes it a
// JSON stream, as the YAMLOrJSONDecoder of DecodeManifests' callers did.
const jsonPeek = 4096

// jsonStream decodes a stream of JSON objects with apimachinery's
// YAMLOrJSONDecoder itself: JSON text needs no conversion, and the decoder
// keeps its rules for a stream that turns out not to be JSON (after at most
// one JSON object it reads the rest as YAML, reporting the JSON error if
// that fails too). Only YAML streams take the direct path of yamlDocument.
func (d *manifestDecoder) jsonStream(data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), jsonPeek)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return d.docErr(d.docs+1, err)
		}
		d.docs++
		if err := d.add(m); err != nil {
			return err
		}
	}
}

// yamlStream splits a YAML stream at its "---" lines with apimachinery's
// YAMLReader, the splitter of the YAMLOrJSONDecoder whose objects
// DecodeManifests gives (a separator is a line starting with "---"
// followed by nothing but spaces or a comment; "\r\n" ends a line as "\n"
// does), and parses each non-empty document (yamlDocument).
func (d *manifestDecoder) yamlStream(data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return d.docErr(d.docs+1, err)
		}
		d.docs++
		if err := d.yamlDocument(doc); err != nil {
			return err
		}
	}
}

// yamlDocument parses one YAML document into an object; a null document is
// skipped.
func (d *manifestDecoder) yamlDocument(doc []byte) error {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return d.docErr(d.docs, err)
	}
	if v == nil {
		return nil
	}
	if _, ok := v.(map[any]any); !ok {
		return d.docErr(d.docs, fmt.Errorf("a document must be a mapping, not %T", v))
	}
	m, err := jsonValue(v)
	if err != nil {
		return d.docErr(d.docs, err)
	}
	return d.add(m.(map[string]any))
}

// add checks an object's identity and keeps it; an empty document is
// skipped.
func (d *manifestDecoder) add(m map[string]any) error {
	if len(m) == 0 {
		return nil
	}
	obj := &unstructured.Unstructured{Object: m}
	if obj.GetAPIVersion() == "" || obj.GetKind() == "" || (obj.GetName() == "" && obj.GetGenerateName() == "") {
		return d.docErr(d.docs, errors.New("apiVersion, kind and metadata.name are required"))
	}
	d.objs = append(d.objs, obj)
	return nil
}

func (d *manifestDecoder) docErr(n int, err error) error {
	return fmt.Errorf("rendered manifests, document %d: %w", n, err)
}

// jsonValue converts a value of go-yaml v2 into the value encoding/json
// would decode from its JSON text: maps with string keys, numbers as
// float64, strings valid UTF-8. What JSON cannot carry (a NaN or infinite
// number, a null or composite key) is an error, as json.Marshal made it.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		return jsonObject(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case string:
		return validUTF8(v), nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
		}
		return v, nil
	case bool, nil:
		return v, nil
	default:
		return nil, fmt.Errorf("unsupported value of type %T", v)
	}
}

// jsonObject converts a YAML mapping: keys become strings as sigs.k8s.io/yaml
// writes them (numbers and booleans in their text, floats at 32-bit
// precision), then are coerced to valid UTF-8 as JSON text carries them.
func jsonObject(m map[any]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	var invalid bool // a key that is not valid UTF-8, from a !!binary key
	for k, e := range m {
		key, err := jsonKey(k, e)
		if err != nil {
			return nil, err
		}
		if out[key], err = jsonValue(e); err != nil {
			return nil, err
		}
		invalid = invalid || !utf8.ValidString(key)
	}
	if !invalid {
		return out, nil
	}
	// Keys that become the same once coerced: JSON text had them in sorted
	// order and its decoder kept the last.
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	valid := make(map[string]any, len(out))
	for _, k := range keys {
		valid[validUTF8(k)] = out[k]
	}
	return valid, nil
}

func jsonKey(k, v any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(k), nil
	default:
		return "", fmt.Errorf("unsupported map key of type %T, key: %+#v, value: %+#v", k, k, v)
	}
}

// validUTF8 replaces each byte that is not UTF-8 with U+FFFD, as
// encoding/json writes a string.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
