package decrypt

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/ini.v1"
)

// loadINI reads an INI file as the library's INI store does (with the
// same parser, gopkg.in/ini.v1): a section is a map of its keys, in order,
// with the section's and each key's comment kept as comment items.
func loadINI(in []byte, b *budget) ([]branch, error) {
	f, err := ini.LoadSources(ini.LoadOptions{AllowNonUniqueSections: true}, in)
	if err != nil {
		return nil, err
	}
	var br branch
	for _, s := range f.Sections() {
		if err := b.take(1); err != nil {
			return nil, err
		}
		var items branch
		if s.Comment != "" {
			items = append(items, item{key: comment{Value: stripCommentChar(s.Comment)}})
		}
		for _, k := range s.Keys() {
			if err := b.take(2); err != nil {
				return nil, err
			}
			items = append(items, item{key: k.Name(), value: k.Value()})
			if k.Comment != "" {
				items = append(items, item{key: comment{Value: stripCommentChar(k.Comment)}})
			}
		}
		br = append(br, item{key: s.Name(), value: items})
	}
	return []branch{br}, nil
}

func stripCommentChar(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

// emitINI prints the documents as the library's INI store does: each
// top-level key a section whose value must be a map; the map's first
// comment is the section's comment, a later comment the previous key's.
func emitINI(docs []branch) ([]byte, error) {
	f := ini.Empty(ini.LoadOptions{AllowNonUniqueSections: true})
	f.DeleteSection(ini.DefaultSection)
	for _, br := range docs {
		for _, it := range br {
			if _, ok := it.key.(comment); ok {
				continue
			}
			name, ok := it.key.(string)
			if !ok {
				return nil, fmt.Errorf("a section name of type %T cannot be printed as INI", it.key)
			}
			s, err := f.NewSection(name)
			if err != nil {
				return nil, fmt.Errorf("printing INI section %q: %v", name, err)
			}
			keys, ok := it.value.(branch)
			if !ok {
				return nil, fmt.Errorf("printing INI: the value of section %q is not a map", name)
			}
			first := 0
			if len(keys) > 0 {
				if c, ok := keys[0].key.(comment); ok {
					s.Comment = c.Value
					first = 1
				}
			}
			var last *ini.Key
			for _, kv := range keys[first:] {
				if c, ok := kv.key.(comment); ok {
					if last != nil {
						last.Comment = c.Value
					}
					continue
				}
				k, ok := kv.key.(string)
				if !ok {
					return nil, fmt.Errorf("a key of type %T cannot be printed as INI", kv.key)
				}
				if last, err = s.NewKey(k, valueText(kv.value)); err != nil {
					return nil, fmt.Errorf("printing INI key %q: %v", k, err)
				}
			}
		}
	}
	var out bytes.Buffer
	_, _ = f.WriteTo(&out)
	return out.Bytes(), nil
}
