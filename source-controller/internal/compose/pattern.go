package compose

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrTooManyMatches is wrapped by Match's error when more folders match
// than its bound.
var ErrTooManyMatches = errors.New("too many folders match")

// Pattern is the folder pattern of an ArtifactGenerator's pathPattern
// (without its "@alias/"): literal path segments and "{name}" captures,
// each capture matching within one segment.
type Pattern struct {
	re *regexp.Regexp
	// names are the captures in order; depth the pattern's segments.
	names []string
	depth int
}

// captureName is a capture's name, as Flux's: a Go regexp group name.
// It must also be a label key (Flux's rule too), checked apart.
var captureName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParsePattern parses a folder pattern such as "apps/{app}/envs/{env}".
// It refuses an absolute path or a ".." segment, a brace without its
// pair, an empty, malformed or repeated capture name, and a name that is
// not a label key (captures become labels).
func ParsePattern(s string) (*Pattern, error) {
	clean := strings.Trim(s, "/")
	if clean == "" || strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("pattern %q: a relative folder path is needed", s)
	}
	p := &Pattern{depth: strings.Count(clean, "/") + 1}
	for _, seg := range strings.Split(clean, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return nil, fmt.Errorf("pattern %q: %w: segment %q", s, ErrUnsafePath, seg)
		}
	}
	var re strings.Builder
	re.WriteString("^")
	seen := map[string]bool{}
	for rest := clean; rest != ""; {
		open, close := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		switch {
		case open < 0 && close < 0:
			re.WriteString(regexp.QuoteMeta(rest))
			rest = ""
			continue
		case open < 0 || (close >= 0 && close < open):
			return nil, fmt.Errorf("pattern %q: a } without its {", s)
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("pattern %q: a { without its }", s)
		}
		name := rest[open+1 : open+end]
		switch {
		case !captureName.MatchString(name):
			return nil, fmt.Errorf("pattern %q: capture {%s}: a name is a letter or _ then letters, digits or _", s, name)
		case len(validation.IsQualifiedName(name)) > 0:
			return nil, fmt.Errorf("pattern %q: capture {%s} is not a label key: %s", s, name, strings.Join(validation.IsQualifiedName(name), "; "))
		case seen[name]:
			return nil, fmt.Errorf("pattern %q: capture {%s} appears twice", s, name)
		}
		seen[name] = true
		p.names = append(p.names, name)
		re.WriteString(regexp.QuoteMeta(rest[:open]))
		re.WriteString("(?P<" + name + ">[^/]+)")
		rest = rest[open+end+1:]
	}
	re.WriteString("$")
	var err error
	if p.re, err = regexp.Compile(re.String()); err != nil {
		return nil, fmt.Errorf("pattern %q: %v", s, err)
	}
	return p, nil
}

// Names returns the pattern's capture names in order.
func (p *Pattern) Names() []string { return p.names }

// Match is a folder that matched a Pattern.
type Match struct {
	// Path is the folder's slash path below the root.
	Path string
	// Captures are the captured segments as they are in the path.
	Captures map[string]string
}

// Match returns the folders below root whose path matches p, in lexical
// order, refusing (ErrTooManyMatches) more than max. Symlinks are not
// followed, and no folder deeper than the pattern is entered.
func (p *Pattern) Match(root string, max int) ([]Match, error) {
	var out []Match
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.Count(rel, "/")+1 >= p.depth {
			if m := p.re.FindStringSubmatch(rel); m != nil {
				caps := make(map[string]string, len(p.names))
				for i, n := range p.re.SubexpNames() {
					if i > 0 {
						caps[n] = m[i]
					}
				}
				if out = append(out, Match{Path: rel, Captures: caps}); len(out) > max {
					return fmt.Errorf("%w: more than %d", ErrTooManyMatches, max)
				}
			}
			return fs.SkipDir
		}
		return nil
	})
	return out, err
}

// Expand replaces each "{name}" of s with vars[name]. A name vars lacks,
// or a brace without its pair, is an error: a placeholder left in a path
// or an object name would be a silent mistake.
func Expand(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	for rest := s; rest != ""; {
		open, close := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		switch {
		case open < 0 && close < 0:
			b.WriteString(rest)
			rest = ""
			continue
		case open < 0 || (close >= 0 && close < open):
			return "", fmt.Errorf("%q: a } without its {", s)
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: a { without its }", s)
		}
		name := rest[open+1 : open+end]
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("%q: {%s} is not a capture of the pathPattern", s, name)
		}
		b.WriteString(rest[:open])
		b.WriteString(v)
		rest = rest[open+end+1:]
	}
	return b.String(), nil
}
