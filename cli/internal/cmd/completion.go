package cmd

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
)

// completionTimeout bounds the list a completion makes: a shell waits for
// it at every TAB.
const completionTimeout = 5 * time.Second

// The completion of arguments. Cobra's own `completion` command writes the
// scripts for bash, zsh, fish and PowerShell; the scripts call back the
// hidden `__complete` command, which runs the ValidArgsFunction below with
// the flags typed so far (-n, --context, --kubeconfig) already parsed.

// completeKindAndName completes `KIND NAME` for the kinds in allowed: a
// kind first (its first name, and Flux's "source" or "image" when a kind
// of that family is allowed), then, after "source" or "image", a type
// word, then the names of the objects of that kind in the namespace, read
// from the cluster.
func (g *globals) completeKindAndName(allowed []*kind, extraKinds ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return prefixed(kindWords(allowed, extraKinds), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		if f := familyOf(strings.ToLower(args[0])); f != nil && len(args) == 1 {
			return prefixed(f.typeWords(allowed), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		ks, rest, err := kindArgs(args, false, allowed...)
		if err != nil || len(ks) != 1 || len(rest) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := g.objectNames(cmd, ks[0])
		if err != nil {
			cobra.CompErrorln(err.Error())
			return nil, cobra.ShellCompDirectiveError
		}
		return prefixed(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n/--namespace with the cluster's
// namespaces.
func (g *globals) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if err := g.kube(); err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := completionContext(cmd, g)
	defer cancel()
	var list corev1.NamespaceList
	if err := g.client.List(ctx, &list); err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return prefixed(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completionContext bounds a completion's reads.
func completionContext(cmd *cobra.Command, g *globals) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, min(completionTimeout, g.timeout))
}

// kindWords are the words offered for a kind: each kind's first name,
// the family words ("source", "image") of the families allowed, and the
// command's own extras ("all").
func kindWords(allowed []*kind, extra []string) []string {
	words := slices.Clone(extra)
	for _, f := range families {
		if len(f.typeWords(allowed)) > 0 {
			words = append(words, f.word)
		}
	}
	for _, k := range allowed {
		words = append(words, k.names[0])
	}
	return words
}

// objectNames lists the names of k's objects in the command's namespace.
func (g *globals) objectNames(cmd *cobra.Command, k *kind) ([]string, error) {
	if err := g.kube(); err != nil {
		return nil, err
	}
	ctx, cancel := completionContext(cmd, g)
	defer cancel()
	items, err := g.list(ctx, k, false)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, o := range items {
		names = append(names, o.GetName())
	}
	return names, nil
}

// prefixed keeps the words that start with prefix, sorted.
func prefixed(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}
