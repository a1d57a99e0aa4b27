package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// family is a word Flux puts before a type word to name a kind: "source
// git", "image policy"; "<word> all" names every kind of the family.
type family struct {
	word, plural string
	types        []familyType
}

// familyType is one type word of a family and the kind it names.
type familyType struct {
	word string
	kind *kind
}

var (
	// sourceFamily: `plumb get sources git`, `plumb reconcile source git NAME`.
	sourceFamily = &family{word: "source", plural: "sources", types: []familyType{
		{"git", gitRepositoryKind}, {"helm", helmRepositoryKind}, {"chart", helmChartKind}, {"oci", ociRepositoryKind}, {"bucket", bucketKind},
	}}
	// imageFamily: `plumb get images all`, `plumb reconcile image update NAME`.
	imageFamily = &family{word: "image", plural: "images", types: []familyType{
		{"repository", imageRepoKind}, {"policy", imagePolicyKind}, {"update", imageUpdateKind},
	}}
	families = []*family{sourceFamily, imageFamily}
)

// familyOf is the family word names, nil for none.
func familyOf(word string) *family {
	for _, f := range families {
		if word == f.word || word == f.plural {
			return f
		}
	}
	return nil
}

// kinds are the family's kinds, in the order of its type words.
func (f *family) kinds() []*kind {
	out := make([]*kind, 0, len(f.types))
	for _, t := range f.types {
		out = append(out, t.kind)
	}
	return out
}

// typeWords are the family's type words among the kinds allowed.
func (f *family) typeWords(allowed []*kind) []string {
	var out []string
	for _, t := range f.types {
		if slices.Contains(allowed, t.kind) {
			out = append(out, t.word)
		}
	}
	return out
}

// read reads the type word after the family's word (sub, as typed),
// among allowed: one kind, or every allowed kind of the family for "all".
func (f *family) read(word, sub string, allowed []*kind) ([]*kind, error) {
	sub = strings.ToLower(sub)
	if sub == "all" {
		var out []*kind
		for _, k := range f.kinds() {
			if slices.Contains(allowed, k) {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s all: no %s kind applies here", word, f.word)
		}
		return out, nil
	}
	for _, t := range f.types {
		if t.word != sub {
			continue
		}
		if !slices.Contains(allowed, t.kind) {
			return nil, fmt.Errorf("%s %s: not a kind this command handles", word, sub)
		}
		return []*kind{t.kind}, nil
	}
	words := make([]string, 0, len(f.types))
	for _, t := range f.types {
		words = append(words, t.word)
	}
	return nil, fmt.Errorf("unknown %s type %q: use %s (or all)", f.word, sub, strings.Join(words, ", "))
}

// kindArgs reads the kind at the front of args, spelled as Flux spells it
// ("source git", "sources all", "image policy", "kustomization",
// "alert-provider") or by any name of the kind table ("source", "gitrepo",
// "ks", "imagepolicy"), and returns the kinds it names, among allowed, and
// the arguments after it.
//
// A family word followed by another is Flux's "<family> <type>". "source"
// alone is also a kind (the GitRepository): a command that needs a NAME
// after the kind passes withName, and then "source git" alone is the
// source named git, as it always was; only "source git NAME" reads git as
// the type. "image" is no kind: the word after it is always the type.
func kindArgs(args []string, withName bool, allowed ...*kind) ([]*kind, []string, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("name a kind, e.g. kustomization or source git")
	}
	word, rest := strings.ToLower(args[0]), args[1:]
	k, kindErr := kindNamed(word, allowed...)
	if f := familyOf(word); f != nil {
		switch {
		case len(rest) > 0 && (!withName || len(rest) > 1 || kindErr != nil):
			ks, err := f.read(word, rest[0], allowed)
			if err != nil {
				return nil, nil, err
			}
			return ks, rest[1:], nil
		case kindErr != nil:
			return nil, nil, fmt.Errorf("%s: name the type: %s (or all)", word, strings.Join(f.typeWords(allowed), ", "))
		}
	}
	if kindErr != nil {
		return nil, nil, kindErr
	}
	return []*kind{k}, rest, nil
}

// kindAndName reads `KIND NAME` (or Flux's `source git NAME`): one kind
// among allowed and exactly one name.
func kindAndName(args []string, allowed ...*kind) (*kind, string, error) {
	ks, rest, err := kindArgs(args, true, allowed...)
	if err != nil {
		return nil, "", err
	}
	if len(ks) != 1 {
		return nil, "", errors.New("name one kind, not all")
	}
	if len(rest) != 1 {
		return nil, "", fmt.Errorf("want one NAME after the kind, got %d argument(s)", len(rest))
	}
	return ks[0], rest[0], nil
}
