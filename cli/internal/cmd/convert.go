package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"plumb.dev/cli/internal/argoconvert"
)

func newConvertCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "convert argocd FILE...",
		Short: "Convert another tool's objects into Plumb's",
	}
	c.AddCommand(newConvertArgoCDCmd(g))
	return c
}

func newConvertArgoCDCmd(g *globals) *cobra.Command {
	opts := argoconvert.DefaultOptions()
	var outDir string
	c := &cobra.Command{
		Use:   "argocd FILE...|-",
		Short: "Print Argo CD's Applications, ApplicationSets and AppProjects as Plumb objects",
		Long: "convert argocd reads Argo CD's Application, ApplicationSet and AppProject manifests\n" +
			"(multi-document YAML; - reads stdin) and prints the Plumb objects that do the same:\n" +
			"an Application becomes a GitRepository, HelmRepository or OCIRepository and a\n" +
			"Kustomization or HelmRelease; an ApplicationSet an ObjectSet (set.plumb.dev/v1)\n" +
			"whose template is its Application template converted alike, in Go template syntax;\n" +
			"an AppProject the destination Namespaces, the ServiceAccount its Applications'\n" +
			"Kustomizations impersonate (project-<name>) and its RBAC. Each object's output is\n" +
			"headed by comments naming every field that did not map and what to do by hand.\n" +
			"Objects go in the Argo CD object's namespace (argocd when it has none) unless -n\n" +
			"is given. The cluster is not contacted. An object that cannot be converted is\n" +
			"printed as a comment saying why, and the command exits 1 once all are done.\n" +
			"docs/design/argocd.md, \"Converting Argo CD's objects\", has every mapping.",
		Example: "  plumb convert argocd guestbook.yaml\n" +
			"  kubectl get applications -n argocd -o yaml | plumb convert argocd -\n" +
			"  plumb convert argocd apps/*.yaml -o converted/ --default-branch=master",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Namespace = g.namespaceFlag()
			var all []argoconvert.Result
			for _, a := range args {
				data, err := readConvertInput(cmd, a)
				if err != nil {
					return err
				}
				rs, err := argoconvert.Convert(data, opts)
				if err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
				all = append(all, rs...)
			}
			if err := writeConverted(g.out, outDir, all); err != nil {
				return err
			}
			failed := 0
			for _, r := range all {
				if r.Err != nil {
					failed++
					fmt.Fprintf(g.errOut, "✗ %v\n", r.Err)
				}
			}
			if failed > 0 {
				return negative(fmt.Errorf("%d of %d objects not converted", failed, len(all)))
			}
			return nil
		},
	}
	c.Flags().StringVarP(&outDir, "output-dir", "o", "", "Write one file per converted object into this folder (made if missing) instead of printing.")
	c.Flags().DurationVar(&opts.Interval, "interval", opts.Interval, "The interval of every produced object (Argo CD compares every 3 minutes by default).")
	c.Flags().StringVar(&opts.DefaultBranch, "default-branch", opts.DefaultBranch, "The branch a GitRepository checks out where Argo CD says HEAD or no revision.")
	return c
}

// readConvertInput reads a file, or stdin for -, bounded.
func readConvertInput(cmd *cobra.Command, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, argoconvert.MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > argoconvert.MaxInputBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", name, argoconvert.MaxInputBytes)
	}
	return data, nil
}

// writeConverted prints the results, or writes one file each under dir.
func writeConverted(out io.Writer, dir string, results []argoconvert.Result) error {
	if dir == "" {
		for _, r := range results {
			if err := argoconvert.Write(out, r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	used := map[string]int{}
	for _, r := range results {
		name := r.FileName()
		if n := used[name]; n > 0 {
			name = fmt.Sprintf("%s-%d.yaml", strings.TrimSuffix(name, ".yaml"), n+1)
		}
		used[r.FileName()]++
		var b bytes.Buffer
		if err := argoconvert.Write(&b, r); err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", p)
	}
	return nil
}
