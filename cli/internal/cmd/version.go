package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/version"
)

// partOfLabel marks what deploy/ installs (its kustomization's labels):
// version reads the Deployments that carry it.
const partOfLabel, partOfValue = "app.kubernetes.io/part-of", "plumb"

func newVersionCmd(g *globals) *cobra.Command {
	var (
		clientOnly bool
		output     string
	)
	c := &cobra.Command{
		Use:   "version [--client] [-o yaml|json]",
		Short: "Print plumb's version and the versions of the controllers in the cluster",
		Long: "version prints this plumb's version and commit, then the version of each program\n" +
			"Plumb runs in the cluster, read as Flux's `flux version` reads it: the image tag\n" +
			"(or digest) of every container of the Deployments labelled\n" +
			partOfLabel + "=" + partOfValue + " in the namespace (-n; " + controllerNamespace + " when -n is\n" +
			"not given), keyed by the image's name. --client prints plumb's alone, without the cluster.",
		Example: "  plumb version\n  plumb version --client\n  plumb version -o json -n plumb-system",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return fmt.Errorf("-o must be yaml or json, not %q", output)
			}
			v := versions{client: version.Get()}
			if !clientOnly {
				ns := g.namespaceFlag()
				if ns == "" {
					ns = controllerNamespace
				}
				err := g.run(cmd, func(ctx context.Context) error {
					var err error
					v.controllers, err = g.controllerVersions(ctx, ns)
					return err
				})
				if err != nil {
					return err
				}
			}
			return v.print(g, output)
		},
	}
	c.Flags().BoolVar(&clientOnly, "client", false, "Print plumb's version only; do not read the cluster.")
	c.Flags().StringVarP(&output, "output", "o", "yaml", "The format: yaml or json.")
	return c
}

// versions is what version prints.
type versions struct {
	client      version.Info
	controllers map[string]string
}

// controllerVersions reads the image versions of Plumb's Deployments in
// ns, by image name. A cluster without them is an error: the question
// was the cluster's versions.
func (g *globals) controllerVersions(ctx context.Context, ns string) (map[string]string, error) {
	var list appsv1.DeploymentList
	if err := g.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{partOfLabel: partOfValue}); err != nil {
		return nil, fmt.Errorf("listing Plumb's Deployments in %s: %w", ns, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no Deployments labelled %s=%s in namespace %s: is Plumb installed there? (-n names another namespace)", partOfLabel, partOfValue, ns)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			name, v := imageVersion(c.Image)
			out[name] = v
		}
	}
	return out, nil
}

// imageVersion splits an image reference into its name (the last path
// element, "source-controller") and its version: the tag, else the
// digest, else "latest", which is what a reference without either pulls.
// A registry's port ("localhost:5000/x") is not taken for a tag.
func imageVersion(image string) (name, v string) {
	ref, digest, hasDigest := strings.Cut(image, "@")
	last := ref[strings.LastIndex(ref, "/")+1:]
	name, tag, hasTag := strings.Cut(last, ":")
	switch {
	case hasTag && tag != "":
		return name, tag
	case hasDigest:
		return name, digest
	}
	return name, "latest"
}

// print writes the versions as YAML (plumb first, then the programs by
// name) or as one JSON object.
func (v versions) print(g *globals, output string) error {
	names := make([]string, 0, len(v.controllers))
	for n := range v.controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	if output == "json" {
		m := map[string]string{"plumb": v.client.Version}
		if v.client.Commit != "" {
			m["commit"] = v.client.Commit
		}
		for n, ver := range v.controllers {
			m[n] = ver
		}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(g.out, "%s\n", b)
		return nil
	}
	// One entry at a time, for the order: plumb first, then the programs.
	entries := [][2]string{{"plumb", v.client.Version}}
	if v.client.Commit != "" {
		entries = append(entries, [2]string{"commit", v.client.Commit})
	}
	for _, n := range names {
		entries = append(entries, [2]string{n, v.controllers[n]})
	}
	for _, e := range entries {
		b, err := yaml.Marshal(map[string]string{e[0]: e[1]})
		if err != nil {
			return err
		}
		if _, err := g.out.Write(b); err != nil {
			return err
		}
	}
	return nil
}
