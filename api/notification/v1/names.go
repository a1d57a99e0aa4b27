package v1

import "strings"

// MatchesName reports whether name is one the reference names: its Name
// with '*' standing for any run of characters (none included), every other
// character for itself. It is the rule for Alert event sources and
// Receiver resources alike.
func (r CrossNamespaceObjectReference) MatchesName(name string) bool {
	parts := strings.Split(r.Name, "*")
	if len(parts) == 1 {
		return r.Name == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	// Taking the leftmost occurrence of each middle part leaves the most
	// room for the rest, so it never misses a match.
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, parts[len(parts)-1])
}
