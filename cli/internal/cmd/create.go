package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"plumb.dev/api/fluxport"
)

// createFieldManager owns the fields `plumb create` writes: a later
// create of the same object takes them over again, and a user's kubectl
// edit of other fields is left alone.
const createFieldManager = "plumb"

// maxInputFile bounds every file `plumb create` reads (values, keys,
// certificates, known_hosts): an object the API server accepts is under
// 1.5 MiB anyway, and a wrong path to a large file should fail at once
// rather than fill memory.
const maxInputFile = 1 << 20

// createOpts are the flags every `create` subcommand shares, as Flux
// spells them.
type createOpts struct {
	g        *globals
	export   bool
	labels   []string
	interval time.Duration
	// intervalSet says --interval was given, which a kind without
	// spec.interval refuses rather than ignores.
	intervalSet bool
}

func newCreateCmd(g *globals) *cobra.Command {
	o := &createOpts{g: g}
	c := &cobra.Command{
		Use:   "create",
		Short: "Create or update sources, Kustomizations, HelmReleases, notification and image objects and Secrets",
		Long: "create builds one of Plumb's objects from flags, server-side applies it as field\n" +
			"manager plumb and waits until its controller reports Ready (bounded by --timeout).\n" +
			"With --export it prints the object as YAML instead and writes nothing.",
	}
	pf := c.PersistentFlags()
	pf.BoolVar(&o.export, "export", false, "Print the object as YAML to stdout instead of applying it.")
	pf.StringSliceVar(&o.labels, "label", nil, "Labels of the object, key=value (several: repeat the flag or separate with commas).")
	pf.DurationVar(&o.interval, "interval", time.Minute, "How often the controller reconciles the object (spec.interval).")
	c.AddCommand(
		newCreateSourceCmd(o),
		newCreateKustomizationCmd(o),
		newCreateHelmReleaseCmd(o),
		newCreateAlertCmd(o),
		newCreateAlertProviderCmd(o),
		newCreateReceiverCmd(o),
		newCreateSecretCmd(o),
		newCreateImageCmd(o),
	)
	return c
}

// target is what a create subcommand is asked to make: its name and
// namespace, and the labels of --label.
type target struct {
	name, namespace string
	labels          map[string]string
}

// built is what a subcommand made: the objects to write in order, and the
// kind of the last, whose Ready is waited for (nil: wait for nothing, as
// for a Secret).
type built struct {
	objs []client.Object
	wait *kind
}

// leaf is a `create ... NAME` command: build turns the flags into objects,
// which are then printed (--export) or applied and waited for.
func (o *createOpts) leaf(use, short, example string, build func(t target) (built, error)) *cobra.Command {
	return &cobra.Command{
		Use:     use + " NAME",
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.intervalSet = cmd.Flags().Changed("interval")
			t, err := o.target(args[0])
			if err != nil {
				return err
			}
			b, err := build(t)
			if err != nil {
				return err
			}
			if o.export {
				return writeManifests(o.g.out, b.objs)
			}
			return o.g.run(cmd, func(ctx context.Context) error { return o.g.applyAndWait(ctx, b) })
		},
	}
}

// target reads NAME, the namespace and --label.
func (o *createOpts) target(name string) (target, error) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return target{}, fmt.Errorf("name %q is invalid: %s", name, strings.Join(errs, "; "))
	}
	ns, _, err := o.g.clientConfig().Namespace()
	if err != nil {
		return target{}, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return target{}, err
	}
	return target{name: name, namespace: ns, labels: labels}, nil
}

// parseLabels reads --label values, each key=value with a valid label key
// and value.
func parseLabels(in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: want key=value", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: invalid key: %s", l, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: invalid value: %s", l, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// applyAndWait server-side applies each object in order, then waits for
// the last to be Ready when b says which kind it is.
func (g *globals) applyAndWait(ctx context.Context, b built) error {
	var last client.Object
	for _, obj := range b.objs {
		u, err := manifest(obj)
		if err != nil {
			return err
		}
		label := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		if err := g.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(createFieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", label, err)
		}
		fmt.Fprintf(g.out, "✚ %s applied\n", label)
		last = obj
	}
	if b.wait == nil || last == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: last.GetNamespace(), Name: last.GetName()}
	obj := b.wait.newObj()
	if err := g.client.Get(ctx, key, obj); err != nil {
		return notFound(err, b.wait, key)
	}
	// A created object carries no reconcile request; the controller's
	// answer is the current generation observed with Ready settled. The
	// token already handled (if the object existed) stays as it is.
	return g.waitHandled(ctx, b.wait, key, b.wait.status(obj).lastHandled)
}

// refusedFlag is the error for a Flux flag whose field Plumb refuses, with
// api/fluxport's reason.
func refusedFlag(flag, kind, field string) error {
	why := fluxport.Refused(kind, field)
	if why == "" {
		why = "Plumb's " + kind + " has no " + field
	}
	return fmt.Errorf("--%s (%s.%s) is not supported: %s", flag, kind, field, why)
}

// noInterval refuses --interval for a kind that has no spec.interval:
// Plumb's notification kinds (api/fluxport says why for those Flux had it
// on) and Secrets.
func (o *createOpts) noInterval(kind string) error {
	if !o.intervalSet {
		return nil
	}
	if kind == "Secret" {
		return errors.New("--interval: a Secret is not reconciled")
	}
	return refusedFlag("interval", kind, "spec.interval")
}

// writeManifests prints objs as YAML documents separated by ---.
func writeManifests(w io.Writer, objs []client.Object) error {
	for i, obj := range objs {
		u, err := manifest(obj)
		if err != nil {
			return err
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
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

// manifest is obj as it is applied and exported: apiVersion, kind,
// metadata cut to name, namespace, labels and annotations, and every
// other top-level field but status (spec; a Secret's type and data).
func manifest(obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	delete(m, "metadata")
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	if l := obj.GetLabels(); len(l) > 0 {
		u.SetLabels(l)
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		u.SetAnnotations(a)
	}
	return u, nil
}

// readInput reads a file named by a flag, bounded by maxInputFile.
func readInput(flag, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInputFile+1))
	if err != nil {
		return nil, fmt.Errorf("--%s: reading %s: %w", flag, path, err)
	}
	if len(data) > maxInputFile {
		return nil, fmt.Errorf("--%s: %s is over %d bytes", flag, path, maxInputFile)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("--%s: %s is empty", flag, path)
	}
	return data, nil
}

// errRequired is the error for a missing required flag.
func errRequired(flag string) error { return errors.New("--" + flag + " is required") }

// objectMeta is the metadata of the object t names.
func objectMeta(t target) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: t.name, Namespace: t.namespace, Labels: t.labels}
}

// oneOf refuses a flag value outside valid.
func oneOf(flag, value string, valid []string) error {
	if slices.Contains(valid, value) {
		return nil
	}
	return fmt.Errorf("--%s %q: use one of %s", flag, value, strings.Join(valid, ", "))
}

// objRef is a reference read from a flag.
type objRef struct{ kind, name, namespace string }

// parseRef reads Flux's `[<kind>/]<name>[.<namespace>]`: the kind, one of
// kinds in any case, may be left out when defaultKind is set.
func parseRef(flag, value, defaultKind string, kinds []string) (objRef, error) {
	kindPart, rest, ok := strings.Cut(value, "/")
	if !ok {
		kindPart, rest = "", value
	}
	name, ns, _ := strings.Cut(rest, ".")
	if name == "" {
		return objRef{}, fmt.Errorf("--%s %q: no name", flag, value)
	}
	r := objRef{name: name, namespace: ns}
	if kindPart == "" {
		if defaultKind == "" {
			return objRef{}, fmt.Errorf("--%s %q: want <kind>/<name>, kind one of %s", flag, value, strings.Join(kinds, ", "))
		}
		r.kind = defaultKind
		return r, nil
	}
	for _, k := range kinds {
		if strings.EqualFold(k, kindPart) {
			r.kind = k
			return r, nil
		}
	}
	return objRef{}, fmt.Errorf("--%s %q: kind %q is not supported: use one of %s", flag, value, kindPart, strings.Join(kinds, ", "))
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
