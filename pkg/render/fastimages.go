package render

import (
	"strings"
	"sync/atomic"
	"unicode/utf8"

	kustypes "sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Images set on the fast path by our own code (docs/design/render-fast-path.md,
// "The overlay: images"): what kustomize's image transformer does to an
// object — its legacy filter (imagetag.LegacyFilter), then its filter of
// the field specs (imagetag.Filter with imageFieldSpecs) — without its
// code, whose name matching (image.IsImageMatched) compiles a regular
// expression on every image value it looks at (666 compilations, 11 MB, a
// render of issue 46's images-patch shape). An object is first walked
// once (imageSitesOf) to find the scalars each filter would set and the
// null lists the field specs' walk makes lists; then each image sets
// them in the filters' order. Where the walk meets anything on which the
// filters' outcome is not plain (an alias, a mapping with a repeated or
// an odd count of keys, a value where the filters refuse one, metadata
// GetMeta refuses) or the image's name is a regular expression that is
// more than literals and dots (ownImageName), the object goes to
// kustomize's filters, as before. TestOwnImagesAreKustomizesFilters
// and FuzzFastPathGenerated hold it to kustomize byte for byte.

// ownImagesUses counts the objects whose images our own code set (or
// found none in); tests read it to prove they compared it with
// kustomize's filters, not the filters with themselves.
var ownImagesUses atomic.Int64

// imageSites are the nodes of one object that kustomize's image
// transformer looks at, whatever the image.
type imageSites struct {
	// legacy are the image scalars the legacy filter sets: the "image"
	// field of each mapping in a list under a "containers" or
	// "initContainers" key anywhere in the object, in its walk's order.
	legacy []*kyaml.Node
	// fields are the scalars at the end of imageFieldSpecs' paths, in
	// their order; nullLists the null values the walk finds where a path
	// asks for a list, which kustomize's field-spec walk turns into an
	// (empty) list node before it looks inside.
	fields, nullLists []*kyaml.Node
}

func (s *imageSites) empty() bool {
	return len(s.legacy) == 0 && len(s.fields) == 0 && len(s.nullLists) == 0
}

// crdKind is the kind both image filters leave alone (kustomize issue 890).
const crdKind = "CustomResourceDefinition"

// imageSitesOf walks r as the two filters would and returns what they
// would set, or false when it cannot be sure that they do only that
// (they would refuse r, or r holds what they read in ways not copied
// here). Setting an image changes a scalar's value and tag only, and a
// null list becomes a list with nothing in it: the sites stay those of
// every image that follows.
func imageSitesOf(n *kyaml.Node, meta kyaml.ResourceMeta) (imageSites, bool) {
	var s imageSites
	if n == nil || n.Kind != kyaml.MappingNode {
		return s, false
	}
	if !s.walkLegacy(n) {
		return s, false
	}
	if meta.Kind == crdKind {
		// Both filters skip it; the walk above checked its shape only.
		return imageSites{}, true
	}
	for _, path := range imageFieldPaths {
		if !s.walkField(n, path) {
			return s, false
		}
	}
	return s, true
}

// walkLegacy is the legacy filter's walk (findFieldsFilter): every
// mapping value and list element, depth first, each mapping's fields in
// order, a field's value walked before it is looked at as containers.
// It also refuses, for the whole object, the shapes on which kyaml's
// visits differ from a plain walk: an alias, a mapping with an odd count
// of nodes, and a repeated key (VisitFields visits the first of two
// keys twice).
func (s *imageSites) walkLegacy(n *kyaml.Node) bool {
	switch n.Kind {
	case kyaml.MappingNode:
		if len(n.Content)%2 != 0 || n.Tag == kyaml.NodeTagNull || repeatsKey(n.Content) {
			return false
		}
		for i := 0; i < len(n.Content); i += 2 {
			value := n.Content[i+1]
			if !s.walkLegacy(value) {
				return false
			}
			if key := n.Content[i].Value; key == "containers" || key == "initContainers" {
				if !s.legacyContainers(value) {
					return false
				}
			}
		}
	case kyaml.SequenceNode:
		if n.Tag == kyaml.NodeTagNull {
			return false
		}
		for _, e := range n.Content {
			if !s.walkLegacy(e) {
				return false
			}
		}
	case kyaml.ScalarNode:
	default:
		// An alias (the filters read through some and not others), or a
		// document inside an object.
		return false
	}
	return true
}

// legacyContainers is the legacy filter's look at a containers field's
// value: in a list, each element's "image" field, skipping null
// elements and refusing any other that is not a mapping, and refusing an
// image that is not a scalar.
func (s *imageSites) legacyContainers(list *kyaml.Node) bool {
	if list.Kind != kyaml.SequenceNode {
		return true
	}
	for _, e := range list.Content {
		if e.Tag == kyaml.NodeTagNull {
			continue
		}
		if e.Kind != kyaml.MappingNode {
			return false
		}
		image := fieldOf(e, "image")
		if image == nil {
			continue
		}
		if image.Kind != kyaml.ScalarNode {
			return false
		}
		s.legacy = append(s.legacy, image)
	}
	return true
}

// walkField is the field-spec filter's walk of one path (fieldspec.Filter
// without creating anything, as the image transformer configures it):
// at the end of the path the value is a site; a null stops the walk; a
// list is walked element by element on the same path; in a mapping the
// next field is looked up (a missing one stops the walk, a null one
// where the path asks for a list becomes an empty list first); anything
// else is refused by kustomize, and the object goes there.
func (s *imageSites) walkField(n *kyaml.Node, path []imagePathPart) bool {
	if len(path) == 0 {
		if n.Kind != kyaml.ScalarNode {
			return false
		}
		s.fields = append(s.fields, n)
		return true
	}
	if n.Tag == kyaml.NodeTagNull {
		return true
	}
	switch n.Kind {
	case kyaml.SequenceNode:
		for _, e := range n.Content {
			if !s.walkField(e, path) {
				return false
			}
		}
		return true
	case kyaml.MappingNode:
		field := fieldOf(n, path[0].name)
		if field == nil {
			return true
		}
		if field.Tag == kyaml.NodeTagNull && path[0].list {
			if field.Kind != kyaml.ScalarNode {
				return false
			}
			s.nullLists = append(s.nullLists, field)
			return true
		}
		return s.walkField(field, path[1:])
	}
	return false
}

// fieldOf is the value of m's first field named name (kyaml's lookup),
// or nil.
func fieldOf(m *kyaml.Node, name string) *kyaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i+1]
		}
	}
	return nil
}

// repeatsKey reports whether two keys of a mapping's content have one
// value.
func repeatsKey(content []*kyaml.Node) bool {
	if len(content) <= 32 {
		for i := 2; i < len(content); i += 2 {
			for j := 0; j < i; j += 2 {
				if content[i].Value == content[j].Value {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]bool, len(content)/2)
	for i := 0; i < len(content); i += 2 {
		if seen[content[i].Value] {
			return true
		}
		seen[content[i].Value] = true
	}
	return false
}

// imagePathPart is one field of a field spec's path; list says the path
// asks for a list there ("containers[]").
type imagePathPart struct {
	name string
	list bool
}

// imageFieldPaths are imageFieldSpecs' paths split as kustomize splits
// them (none of them escapes a slash).
var imageFieldPaths = func() [][]imagePathPart {
	paths := make([][]imagePathPart, len(imageFieldSpecs))
	for i, fs := range imageFieldSpecs {
		for _, p := range strings.Split(fs.Path, "/") {
			name, list := strings.CutSuffix(p, "[]")
			paths[i] = append(paths[i], imagePathPart{name: name, list: list})
		}
	}
	return paths
}()

// set does what the image transformer does with img to the object whose
// sites s are: the legacy filter sets its sites, then the field-spec
// filter makes its null lists lists and sets its sites. A scalar may be
// a site of both: a tag suffix is then added twice, as kustomize does.
func (s *imageSites) set(img kustypes.Image) {
	for _, n := range s.legacy {
		setImage(n, img)
	}
	for _, n := range s.nullLists {
		n.Kind, n.Tag = kyaml.SequenceNode, kyaml.NodeTagEmpty
	}
	for _, n := range s.fields {
		setImage(n, img)
	}
}

// setImage is the filters' update of one image value (imageTagUpdater):
// when the value names img's image, its name, tag and digest are
// replaced as img says, and the node is replaced as kyaml's FieldSetter
// replaces a scalar: a new scalar without a tag, keeping only the style.
func setImage(n *kyaml.Node, img kustypes.Image) {
	if !imageMatches(n.Value, img.Name) {
		return
	}
	name, tag, digest := splitImage(n.Value)
	if img.NewName != "" {
		name = img.NewName
	}
	switch {
	case img.NewTag != "" && img.Digest != "":
		tag, digest = img.NewTag, img.Digest
	case img.NewTag != "":
		tag, digest = img.NewTag, ""
	case img.Digest != "":
		tag, digest = "", img.Digest
	case img.TagSuffix != "":
		tag, digest = tag+img.TagSuffix, ""
	}
	if tag != "" {
		name += ":" + tag
	}
	if digest != "" {
		name += "@" + digest
	}
	*n = kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagEmpty, Value: name, Style: n.Style}
}

// ownImageName reports whether imageMatches decides for name what
// kustomize's IsImageMatched does: kustomize puts the name in a regular
// expression as it is, so a name must be ASCII, and of the expression's
// special characters hold only the dot (any character but a newline).
func ownImageName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || strings.IndexByte(`\+*?()|[]{}^$`, c) >= 0 {
			return false
		}
	}
	return true
}

// imageMatches is kustomize's IsImageMatched(value, name) for a name
// ownImageName takes: the expression
// ^name(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$
// matched by hand. The name is literals and dots, so it matches exactly
// as many characters (runes, as Go's regexp reads them) of value as it
// has; the rest must be an optional tag, then an optional digest.
func imageMatches(value, name string) bool {
	i := 0
	for j := 0; j < len(name); j++ {
		if i >= len(value) {
			return false
		}
		if name[j] == '.' {
			r, size := utf8.DecodeRuneInString(value[i:])
			if r == '\n' {
				return false
			}
			i += size
			continue
		}
		// name[j] is ASCII: no byte of a multi-byte rune equals it.
		if value[i] != name[j] {
			return false
		}
		i++
	}
	return isTagAndDigest(value[i:])
}

// isTagAndDigest matches (:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?
// against all of rest. Neither ':' nor '@' is a tag character, so the
// tag is all the tag characters after a ':', and the digest's algorithm
// all before the first ':' after its '@'.
func isTagAndDigest(rest string) bool {
	if strings.HasPrefix(rest, ":") {
		rest = rest[1+tagChars(rest[1:]):]
	}
	if rest == "" {
		return true
	}
	if rest[0] != '@' {
		return false
	}
	algorithm, encoded, found := strings.Cut(rest[1:], ":")
	return found && isDigestAlgorithm(algorithm) && tagChars(encoded) == len(encoded)
}

// tagChars is how many bytes at the start of s are tag characters,
// [a-zA-Z0-9_.{}-].
func tagChars(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte("_.{}-", c) < 0 {
			return i
		}
	}
	return len(s)
}

// isDigestAlgorithm matches [a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)* against
// all of s: alphanumerics, with single separators between them.
func isDigestAlgorithm(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		if strings.IndexByte(".+_-", c) < 0 || i == 0 || i == len(s)-1 || !isAlnum(s[i-1]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// splitImage is kustomize's image.Split: an image's name, tag and
// digest, its ':' and '@' looked for from its first '/' on (a registry's
// port is not a tag) unless it opens with one.
func splitImage(image string) (name, tag, digest string) {
	from := 0
	if i := strings.IndexByte(image, '/'); i > 0 {
		from = i
	}
	at := strings.IndexByte(image[from:], '@')
	colon := strings.IndexByte(image[from:], ':')
	switch {
	case at < 0 && colon < 0:
		return image, "", ""
	case at >= 0 && (colon < 0 || at < colon):
		return image[:from+at], "", image[from+at+1:]
	case at >= 0:
		return image[:from+colon], image[from+colon+1 : from+at], image[from+at+1:]
	}
	return image[:from+colon], image[from+colon+1:], ""
}
