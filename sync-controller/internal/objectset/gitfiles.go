package objectset

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/yamlsize"
)

// Bounds of reading a GitRepository's artifact for a git generator.
const (
	// maxTreeEntries bounds the entries of the archive read.
	maxTreeEntries = 100_000
	// maxFileBytes bounds one file a files pattern matches.
	maxFileBytes = 1 << 20
	// maxFilesBytes bounds the matched files together.
	maxFilesBytes = 16 << 20
	// maxFileNodes bounds a matched file's YAML nodes after alias
	// expansion.
	maxFileNodes = 100_000
)

// tree is the folders and files of an artifact (a tar.gz of a checkout),
// with the contents of the files kept only for those a files pattern
// may want: .yaml, .yml and .json.
type tree struct {
	dirs     []string
	contents map[string][]byte
}

// readTree reads an artifact in memory. Links are skipped (a generator
// never follows one out of the tree), as are entries whose names leave
// it.
func readTree(r io.Reader) (*tree, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("reading the artifact: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	t := &tree{contents: map[string][]byte{}}
	dirs := map[string]bool{}
	var kept int
	for n := 0; ; n++ {
		if n >= maxTreeEntries {
			return nil, fmt.Errorf("the artifact has more than %d entries", maxTreeEntries)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the artifact: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			addDirs(dirs, name)
		case tar.TypeReg:
			addDirs(dirs, path.Dir(name))
			switch path.Ext(name) {
			case ".yaml", ".yml", ".json":
			default:
				continue
			}
			if hdr.Size > maxFileBytes {
				// Kept without content: a pattern that matches it fails,
				// one that does not never notices.
				t.contents[name] = nil
				continue
			}
			if kept+int(hdr.Size) > maxFilesBytes {
				return nil, fmt.Errorf("the artifact's YAML and JSON files are more than %d bytes", maxFilesBytes)
			}
			b, err := io.ReadAll(io.LimitReader(tr, maxFileBytes+1))
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
			kept += len(b)
			t.contents[name] = b
		}
	}
	delete(dirs, ".")
	for d := range dirs {
		t.dirs = append(t.dirs, d)
	}
	slices.Sort(t.dirs)
	return t, nil
}

// addDirs records dir and its parents (an archive may list files
// without their folders).
func addDirs(dirs map[string]bool, dir string) {
	for dir != "." && dir != "/" && dir != "" && !dirs[dir] {
		dirs[dir] = true
		dir = path.Dir(dir)
	}
}

// matches reports whether p matches one of the patterns that include and
// none of those that exclude.
func matches(p string, patterns []setv1.GitPath) (bool, error) {
	in := false
	for _, pat := range patterns {
		ok, err := glob(strings.Trim(pat.Path, "/"), p)
		if err != nil {
			return false, fmt.Errorf("path %q: %w", pat.Path, err)
		}
		if ok && pat.Exclude {
			return false, nil
		}
		in = in || ok
	}
	return in, nil
}

// glob matches name against pattern segment by segment with path.Match;
// a ** segment matches any number of segments, none included.
func glob(pattern, name string) (bool, error) {
	ps, ns := strings.Split(pattern, "/"), strings.Split(name, "/")
	var match func(ps, ns []string) (bool, error)
	match = func(ps, ns []string) (bool, error) {
		if len(ps) == 0 {
			return len(ns) == 0, nil
		}
		if ps[0] == "**" {
			for i := 0; i <= len(ns); i++ {
				if ok, err := match(ps[1:], ns[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(ns) == 0 {
			return false, nil
		}
		ok, err := path.Match(ps[0], ns[0])
		if err != nil || !ok {
			return false, err
		}
		return match(ps[1:], ns[1:])
	}
	return match(ps, ns)
}

// directories gives an element per folder that the patterns match:
// .path.path, .path.basename, .path.basenameNormalized, .path.segments
// (Argo CD's names).
func (t *tree) directories(patterns []setv1.GitPath) ([]Element, error) {
	var out []Element
	for _, d := range t.dirs {
		ok, err := matches(d, patterns)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Element{"path": pathFields(d)})
		}
	}
	return out, nil
}

// fileElements gives the elements of the YAML or JSON files that the patterns
// match: a file holding an object is one element of its fields, a file
// holding a list an element per item; each with .path (its folder's
// fields, and .path.filename, .path.filenameNormalized).
func (t *tree) fileElements(patterns []setv1.GitPath) ([]Element, error) {
	names := make([]string, 0, len(t.contents))
	for n := range t.contents {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Element
	for _, name := range names {
		ok, err := matches(name, patterns)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		data := t.contents[name]
		if data == nil {
			return nil, fmt.Errorf("%s is larger than %d bytes", name, maxFileBytes)
		}
		items, err := decodeFile(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p := pathFields(path.Dir(name))
		p["filename"] = path.Base(name)
		p["filenameNormalized"] = normalize(path.Base(name))
		for _, it := range items {
			el := overlay(it, nil)
			el["path"] = p
			out = append(out, el)
			if len(out) > MaxElements {
				return nil, fmt.Errorf("the files give more than %d elements", MaxElements)
			}
		}
	}
	return out, nil
}

// decodeFile reads a YAML (or JSON) file of one object or a list of
// objects, its size after alias expansion bounded.
func decodeFile(data []byte) ([]Element, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, err
	}
	if n.Kind == 0 {
		return nil, nil
	}
	if _, err := yamlsize.Expanded(&n, maxFileNodes); err != nil {
		return nil, err
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	v, err := jsonValue(v)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return []Element{v}, nil
	case []any:
		out := make([]Element, 0, len(v))
		for i, it := range v {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("item %d is no object", i)
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, errors.New("the file holds neither an object nor a list of objects")
}

// jsonValue turns what yaml.v3 decoded into JSON values (map keys as
// strings, numbers as int64 or float64), as Kubernetes' unstructured
// objects hold them.
func jsonValue(v any) (any, error) {
	b, err := utiljson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	var out any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// pathFields are a folder's fields under .path.
func pathFields(dir string) map[string]any {
	if dir == "." {
		dir = ""
	}
	segs := []any{}
	if dir != "" {
		for _, s := range strings.Split(dir, "/") {
			segs = append(segs, s)
		}
	}
	base := path.Base(dir)
	if dir == "" {
		base = ""
	}
	return map[string]any{
		"path":               dir,
		"basename":           base,
		"basenameNormalized": normalize(base),
		"segments":           segs,
	}
}

var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// normalize makes s a name Kubernetes accepts as a label value and a
// DNS-1123 label: lower case, other characters as '-', at most 63.
func normalize(s string) string {
	s = notNameChars.ReplaceAllString(strings.ToLower(s), "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-")
}
