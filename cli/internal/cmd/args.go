package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// sourceTypes are the source kinds by the type word Flux puts after
// "source": `plumb get sources git`, `plumb reconcile source git NAME`.
var sourceTypes = map[string]*kind{"git": gitRepositoryKind, "helm": helmRepositoryKind, "chart": helmChartKind, "oci": ociRepositoryKind, "bucket": bucketKind}

// sourceKinds are every source kind, what "sources all" names.
var sourceKinds = []*kind{gitRepositoryKind, helmRepositoryKind, helmChartKind, ociRepositoryKind, bucketKind}

// kindArgs reads the kind at the front of args, spelled as Flux spells it
// ("source git", "sources all", "kustomization", "alert-provider") or by
// any name of the kind table ("source", "gitrepo", "ks"), and returns the
// kinds it names, among allowed, and the arguments after it.
//
// "source" followed by a word is Flux's "source <type>" when that word is
// a source type or "all". A command that needs a NAME after the kind
// passes withName: then "source git" alone is the source named git, as it
// always was, and only "source git NAME" reads git as the type.
func kindArgs(args []string, withName bool, allowed ...*kind) ([]*kind, []string, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("name a kind, e.g. kustomization or source git")
	}
	word, rest := strings.ToLower(args[0]), args[1:]
	if (word == "source" || word == "sources") && len(rest) > 0 && (!withName || len(rest) > 1) {
		sub := strings.ToLower(rest[0])
		if sub == "all" {
			var out []*kind
			for _, k := range sourceKinds {
				if slices.Contains(allowed, k) {
					out = append(out, k)
				}
			}
			if len(out) == 0 {
				return nil, nil, fmt.Errorf("%s all: no source kind applies here", word)
			}
			return out, rest[1:], nil
		}
		k, ok := sourceTypes[sub]
		if !ok {
			return nil, nil, fmt.Errorf("unknown source type %q: use git, helm, chart, oci, bucket (or all)", rest[0])
		}
		if !slices.Contains(allowed, k) {
			return nil, nil, fmt.Errorf("%s %s: not a kind this command handles", word, sub)
		}
		return []*kind{k}, rest[1:], nil
	}
	k, err := kindNamed(word, allowed...)
	if err != nil {
		return nil, nil, err
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
