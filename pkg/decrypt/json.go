package decrypt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// loadJSON reads a JSON file's top-level object as the library's JSON
// store does: token by token, so that keys keep their order (and
// duplicates), numbers become int when they fit and float64 otherwise,
// and anything after the object is ignored.
func loadJSON(in []byte, b *budget) ([]branch, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("a SOPS JSON file is an object, not %v", t)
	}
	br, err := b.jsonObject(dec, 1)
	if err != nil {
		return nil, err
	}
	return []branch{br}, nil
}

var errEndOfObject = errors.New("end of object")

// jsonObject reads the items of an object whose '{' was read. An empty
// object is a nil branch, as in the library.
func (b *budget) jsonObject(dec *json.Decoder, depth int) (branch, error) {
	if err := b.take(depth); err != nil {
		return nil, err
	}
	var br branch
	for {
		it, err := b.jsonItem(dec, depth)
		if errors.Is(err, io.EOF) || errors.Is(err, errEndOfObject) {
			return br, nil
		}
		if err != nil {
			return nil, err
		}
		br = append(br, it)
	}
}

func (b *budget) jsonItem(dec *json.Decoder, depth int) (item, error) {
	t, err := dec.Token()
	if err != nil && !errors.Is(err, io.EOF) {
		return item{}, err
	}
	var it item
	switch t := t.(type) {
	case string:
		it.key = t
	case json.Delim:
		if t == '}' {
			return item{}, errEndOfObject
		}
		return item{}, fmt.Errorf("expected a JSON object key, got %v", t)
	default:
		return item{}, fmt.Errorf("expected a JSON object key, got %v", t)
	}
	if it.value, err = b.jsonValue(dec, depth+1); err != nil {
		return item{}, err
	}
	return it, nil
}

func (b *budget) jsonValue(dec *json.Decoder, depth int) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('['):
		return b.jsonArray(dec, depth)
	case json.Delim('{'):
		return b.jsonObject(dec, depth)
	}
	if _, ok := t.(json.Delim); ok {
		return nil, nil // as in the library, which keeps no value
	}
	if err := b.take(depth); err != nil {
		return nil, err
	}
	return jsonNumber(t)
}

func (b *budget) jsonArray(dec *json.Decoder, depth int) ([]any, error) {
	if err := b.take(depth); err != nil {
		return nil, err
	}
	var list []any
	for {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		switch t {
		case json.Delim(']'):
			return list, nil
		case json.Delim('{'):
			v, err = b.jsonObject(dec, depth+1)
		case json.Delim('['):
			v, err = b.jsonArray(dec, depth+1)
		default:
			if err = b.take(depth + 1); err == nil {
				v, err = jsonNumber(t)
			}
		}
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
}

func jsonNumber(t json.Token) (any, error) {
	n, ok := t.(json.Number)
	if !ok {
		return t, nil
	}
	if i, err := n.Int64(); err == nil {
		return int(i), nil
	}
	return n.Float64()
}

// emitJSON prints the first document as the library's JSON store does
// (with the store settings render-controller has always used): keys in
// order, comments dropped, json.Indent with an empty indent, a final
// newline.
func emitJSON(docs []branch) ([]byte, error) {
	if len(docs) == 0 {
		return nil, fmt.Errorf("no document to print")
	}
	var compact bytes.Buffer
	if err := jsonWrite(&compact, docs[0]); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", ""); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func jsonWrite(w *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case branch:
		w.WriteByte('{')
		first := true
		for _, it := range v {
			if _, ok := it.key.(comment); ok {
				continue
			}
			k, ok := it.key.(string)
			if !ok {
				return fmt.Errorf("a key of type %T cannot be printed as JSON", it.key)
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			kb, err := json.Marshal(k)
			if err != nil {
				return err
			}
			w.Write(kb)
			w.WriteString(": ")
			if err := jsonWrite(w, it.value); err != nil {
				return err
			}
		}
		w.WriteByte('}')
		return nil
	case []any:
		w.WriteByte('[')
		first := true
		for _, x := range v {
			if _, ok := x.(comment); ok {
				continue
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			if err := jsonWrite(w, x); err != nil {
				return err
			}
		}
		w.WriteByte(']')
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Write(b)
	return nil
}

// emitBinary prints a binary file: the string value of the one document's
// data key.
func emitBinary(docs []branch) ([]byte, error) {
	if len(docs) != 1 {
		return nil, fmt.Errorf("a binary file has exactly one document")
	}
	for _, it := range docs[0] {
		if k, ok := it.key.(string); ok && k == "data" {
			s, ok := it.value.(string)
			if !ok {
				return nil, fmt.Errorf("the data key of a binary file is not a string")
			}
			return []byte(s), nil
		}
	}
	return nil, fmt.Errorf("a binary file has no data key")
}
