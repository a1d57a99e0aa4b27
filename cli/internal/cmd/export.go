package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/manage"
)

func newExportCmd(g *globals) *cobra.Command {
	var exportAll, allNamespaces bool
	c := &cobra.Command{
		Use:   "export source [git|helm|chart|all]|kustomization|helmrelease|receiver|alert|alert-provider|image [repository|policy|update|all] NAME|--all",
		Short: "Print Plumb objects as clean YAML to commit to Git",
		Long: "export prints objects the way they belong in Git: apiVersion, kind, metadata\n" +
			"(name, namespace, labels, annotations) and spec, without status, the fields the\n" +
			"API server keeps (uid, resourceVersion, generation, creationTimestamp,\n" +
			"managedFields), finalizers, the reconcile request annotations and the labels\n" +
			"and annotation sync-controller stamps on objects it manages (kustomize.plumb.dev/*,\n" +
			"helm.plumb.dev/*, plumb.dev/applied-hash). Several objects\n" +
			"are separated by ---.",
		Example: "  plumb export source git podinfo > podinfo-source.yaml\n  plumb export kustomization --all -n team-a\n" +
			"  plumb export source helm podinfo\n  plumb export helmrelease --all -A\n  plumb export alert-provider slack\n  plumb export image policy --all",
		Args:              cobra.ArbitraryArgs, // kindArgs checks them
		ValidArgsFunction: g.completeKindAndName(allKinds),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, rest, err := kindArgs(args, !exportAll, allKinds...)
			if err != nil {
				return err
			}
			switch {
			case exportAll && len(rest) > 0:
				return fmt.Errorf("give a NAME or --all, not both")
			case !exportAll && len(rest) != 1:
				return fmt.Errorf("want one NAME after the kind (or --all), got %d argument(s)", len(rest))
			case !exportAll && len(ks) != 1:
				return fmt.Errorf("a NAME needs one kind, not all")
			case allNamespaces && !exportAll:
				return fmt.Errorf("-A goes with --all")
			}
			return g.run(cmd, func(ctx context.Context) error {
				var objs []client.Object
				if !exportAll {
					key := types.NamespacedName{Namespace: g.ns, Name: rest[0]}
					obj := ks[0].newObj()
					if err := g.client.Get(ctx, key, obj); err != nil {
						return notFound(err, ks[0], key)
					}
					objs = append(objs, obj)
				}
				for _, k := range ks {
					if !exportAll {
						break
					}
					items, err := g.list(ctx, k, allNamespaces)
					if err != nil {
						return err
					}
					if len(items) == 0 {
						g.noneFound(k.plural, allNamespaces)
					}
					objs = append(objs, items...)
				}
				return writeExport(g.out, objs)
			})
		},
	}
	c.Flags().BoolVar(&exportAll, "all", false, "Export every object of the kind in the namespace.")
	c.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "With --all, export the objects of every namespace.")
	return c
}

// writeExport writes objs as YAML documents separated by ---.
func writeExport(w io.Writer, objs []client.Object) error {
	for i, o := range objs {
		u, err := exported(o)
		if err != nil {
			return err
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// exportedAnnotations are annotations that say something to a controller
// about one moment, or that sync-controller writes: they do not belong in
// Git.
var exportedAnnotations = []string{
	meta.ReconcileRequestAnnotation,
	meta.FluxReconcileRequestAnnotation,
	kustomizev1.ConfirmPruneAnnotation,
	kustomizev1.RollbackAnnotation,
	kustomizev1.RollbackFollowGitAnnotation,
	manage.AppliedHashAnnotation,
	"kubectl.kubernetes.io/last-applied-configuration",
}

// exported is obj as it belongs in Git: manifest's cut (apiVersion,
// kind, name, namespace, labels, annotations, spec; no status), without
// the labels and annotations controllers write.
func exported(obj client.Object) (*unstructured.Unstructured, error) {
	u, err := manifest(obj)
	if err != nil {
		return nil, err
	}
	labels := u.GetLabels()
	delete(labels, kustomizev1.NameLabel)
	delete(labels, kustomizev1.NamespaceLabel)
	delete(labels, helmv2.NameLabel)
	delete(labels, helmv2.NamespaceLabel)
	if len(labels) > 0 {
		u.SetLabels(labels)
	} else {
		unstructured.RemoveNestedField(u.Object, "metadata", "labels")
	}
	annotations := u.GetAnnotations()
	for _, a := range exportedAnnotations {
		delete(annotations, a)
	}
	if len(annotations) > 0 {
		u.SetAnnotations(annotations)
	} else {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	}
	return u, nil
}
