package compose

import (
	"path"
	"strings"
)

// hasMeta reports whether a path element is a glob.
func hasMeta(elem string) bool { return strings.ContainsAny(elem, `*?[\`) }

// splitGlob splits a clean slash path into its non-glob prefix (the
// elements before the first glob) and the rest; rest is "" for a plain
// path.
func splitGlob(p string) (prefix, rest string) {
	elems := strings.Split(p, "/")
	for i, e := range elems {
		if hasMeta(e) {
			return strings.Join(elems[:i], "/"), strings.Join(elems[i:], "/")
		}
	}
	return p, ""
}

// match reports whether the slash path name matches pattern, where an
// element "**" matches any number of elements (none included) and every
// other element matches as path.Match does. A malformed pattern matches
// nothing; validate checks patterns before they are used.
func match(pattern, name string) bool {
	return matchElems(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**" and try every split point.
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range name {
				if matchElems(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// validPattern reports whether every element of a glob is well formed.
func validPattern(pattern string) bool {
	for _, e := range strings.Split(pattern, "/") {
		if e == "**" {
			continue
		}
		if _, err := path.Match(e, ""); err != nil {
			return false
		}
	}
	return true
}

// excluded reports whether rel (below the non-glob prefix) or full (below
// the source's root) matches one of the exclude patterns; a pattern
// without "/" is matched against the file name, at any depth.
func excluded(patterns []string, rel, full string) bool {
	for _, p := range patterns {
		p = strings.TrimPrefix(p, "/")
		if !strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			for _, e := range strings.Split(rel, "/") {
				if match(strings.TrimSuffix(p, "/"), e) {
					return true
				}
			}
			continue
		}
		if match(p, rel) || match(p, full) {
			return true
		}
	}
	return false
}
