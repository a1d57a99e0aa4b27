package object

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Text returns group/kind/namespace/name, always four parts, empty for the
// core group and for a cluster-scoped object (apps/Deployment/prod/web,
// /ConfigMap/prod/settings, /Namespace//prod): the form an id takes where
// it must be parsed back, in a URL or a query string, with ParseText.
func (id ID) Text() string {
	return id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}

// ParseText parses what Text returns. It is for text from outside (a query
// string): every part is checked as the API server would check it, so an
// id that parses names an object the API could hold.
func ParseText(s string) (ID, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return ID{}, fmt.Errorf("object id %q: want group/kind/namespace/name", s)
	}
	id := ID{Group: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3]}
	if id.Group != "" && len(validation.IsDNS1123Subdomain(id.Group)) > 0 {
		return ID{}, fmt.Errorf("object id %q: group %q is not a DNS subdomain", s, id.Group)
	}
	if id.Kind == "" || len(id.Kind) > 63 || !isIdentifier(id.Kind) {
		return ID{}, fmt.Errorf("object id %q: kind %q is not a kind name", s, id.Kind)
	}
	if id.Namespace != "" && len(validation.IsDNS1123Label(id.Namespace)) > 0 {
		return ID{}, fmt.Errorf("object id %q: namespace %q is not a DNS label", s, id.Namespace)
	}
	// Names are DNS subdomains for most kinds; the few kinds that allow
	// more still take a path segment, never empty, . or .. or with a slash
	// (Split took those) or a percent sign.
	if id.Name == "" || len(id.Name) > 253 || id.Name == "." || id.Name == ".." || strings.ContainsAny(id.Name, "%") {
		return ID{}, fmt.Errorf("object id %q: name %q is not an object name", s, id.Name)
	}
	return id, nil
}

// isIdentifier says whether s is letters and digits, starting with a
// letter, as kind names are.
func isIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
