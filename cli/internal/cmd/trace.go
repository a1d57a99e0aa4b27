package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

func newTraceCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "trace KIND NAME",
		Short: "Show which Kustomization (or HelmRelease) and source manage an object, and how it stands against them",
		Long: "trace reads an object's ownership labels (kustomize.plumb.dev/name and\n" +
			"kustomize.plumb.dev/namespace, which sync-controller stamps on everything it\n" +
			"applies) and prints the Kustomization that manages it with its revision, the\n" +
			"GitRepository it comes from with its URL and revision, and the object's standing:\n" +
			"its health, whether the Kustomization's inventory lists it, and its drift. An\n" +
			"object labelled helm.plumb.dev/name and helm.plumb.dev/namespace is traced to its\n" +
			"HelmRelease, its HelmChart and the chart's source instead.\n\n" +
			"KIND is spelled as kubectl spells it: a kind, a resource or a short name,\n" +
			"optionally with its group (deployment, deploy, deployments.apps, ConfigMap).\n\n" +
			"Exit code 1 when the object is not managed by Plumb.",
		Example: "  plumb trace deployment podinfo -n podinfo\n  plumb trace namespace podinfo",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.run(cmd, func(ctx context.Context) error { return g.trace(ctx, args[0], args[1]) })
		},
	}
}

// resolveKind maps what a user typed for a kind to a GroupVersionKind and
// whether it is namespaced, through discovery and short names as kubectl does.
func (g *globals) resolveKind(arg string) (schema.GroupVersionKind, bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return schema.GroupVersionKind{}, false, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	var gvk schema.GroupVersionKind
	fullySpecified, gr := schema.ParseResourceArg(arg)
	if fullySpecified != nil {
		gvk, _ = mapper.KindFor(*fullySpecified)
	}
	if gvk.Empty() {
		if gvk, err = mapper.KindFor(gr.WithVersion("")); err != nil {
			return gvk, false, fmt.Errorf("the server does not know the kind %q: %w", arg, err)
		}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvk, false, err
	}
	return gvk, mapping.Scope.Name() == apimeta.RESTScopeNameNamespace, nil
}

func (g *globals) trace(ctx context.Context, kindArg, name string) error {
	gvk, namespaced, err := g.resolveKind(kindArg)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Name: name}
	if namespaced {
		key.Namespace = g.ns
	}
	if err := g.client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			if namespaced {
				return fmt.Errorf("%s %s not found in namespace %s", gvk.Kind, name, key.Namespace)
			}
			return fmt.Errorf("%s %s not found", gvk.Kind, name)
		}
		return fmt.Errorf("reading %s %s: %w", gvk.Kind, name, err)
	}
	id := object.IDOf(obj)
	owner, ok := kustomizationOwner(obj.GetLabels())
	hrName, isHelm := obj.GetLabels()[helmv2.NameLabel]
	if !ok && !isHelm {
		return negative(fmt.Errorf("%s is not managed by Plumb: it has no %s or %s label", id, kustomizev1.NameLabel, helmv2.NameLabel))
	}

	w := tabwriter.NewWriter(g.out, 0, 8, 2, ' ', 0)
	defer w.Flush()
	field := func(name, value string) { fmt.Fprintf(w, "%s:\t%s\n", name, value) }

	field("Object", id.String())
	field("Health", oneLine(health.Evaluate(obj).String()))
	if !ok {
		hrKey := types.NamespacedName{Namespace: obj.GetLabels()[helmv2.NamespaceLabel], Name: hrName}
		return g.traceHelmRelease(ctx, w, field, id, hrKey)
	}
	ksKey := types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}
	field("Managed by", kustomizev1.KustomizationKind+"/"+ksKey.Namespace+"/"+ksKey.Name)
	ks := &kustomizev1.Kustomization{}
	if err := g.client.Get(ctx, ksKey, ks); err != nil {
		_ = w.Flush()
		if apierrors.IsNotFound(err) {
			return negative(fmt.Errorf("%s is labelled as managed by Kustomization %s/%s, which does not exist (an orphan)", id, ksKey.Namespace, ksKey.Name))
		}
		return notFound(err, kustomizationKind, ksKey)
	}
	field("In inventory", inInventory(ks.Status.Inventory, id))
	driftText := "none"
	if d := inspect.DriftByObject(ks.Status.Drift)[id.String()]; d != nil {
		driftText = driftTextOf(d, ks.GetDriftPolicy())
	}
	field("Drift", driftText)
	fmt.Fprintln(w)

	field("Kustomization", ks.Namespace+"/"+ks.Name)
	path := ks.Spec.Path
	if path == "" {
		path = "(the root)"
	}
	field("Path", path)
	field("Applied revision", dash(ks.Status.LastAppliedRevision))
	field("Attempted revision", dash(ks.Status.LastAttemptedRevision))
	field("Sync status", syncStatus(appliedKustomization(ks)))
	field("Ready", readyLine(ks.Status.Conditions, ks.Spec.Suspend))
	if parent, ok := kustomizationOwner(ks.GetLabels()); ok {
		field("Managed by", kustomizev1.KustomizationKind+"/"+parent.Namespace+"/"+parent.Name)
	}
	fmt.Fprintln(w)

	srcKey := types.NamespacedName{Namespace: ks.Spec.SourceRef.Namespace, Name: ks.Spec.SourceRef.Name}
	if srcKey.Namespace == "" {
		srcKey.Namespace = ks.Namespace
	}
	field(ks.Spec.SourceRef.Kind, srcKey.Namespace+"/"+srcKey.Name)
	src := &sourcev1.GitRepository{}
	if err := g.client.Get(ctx, srcKey, src); err != nil {
		field("Error", notFound(err, gitRepositoryKind, srcKey).Error())
		return nil
	}
	field("URL", src.Spec.URL)
	if r := src.Spec.Reference; r != nil {
		field("Reference", refText(r))
	}
	rev := "-"
	if src.Status.Artifact != nil {
		rev = src.Status.Artifact.Revision
	}
	field("Revision", rev)
	field("Ready", readyLine(src.Status.Conditions, src.Spec.Suspend))
	return nil
}

// traceHelmRelease prints the HelmRelease that manages an object, its
// HelmChart and the chart's source.
func (g *globals) traceHelmRelease(ctx context.Context, w *tabwriter.Writer, field func(name, value string), id object.ID, key types.NamespacedName) error {
	field("Managed by", helmv2.HelmReleaseKind+"/"+key.Namespace+"/"+key.Name)
	hr := &helmv2.HelmRelease{}
	if err := g.client.Get(ctx, key, hr); err != nil {
		_ = w.Flush()
		if apierrors.IsNotFound(err) {
			return negative(fmt.Errorf("%s is labelled as managed by HelmRelease %s/%s, which does not exist (an orphan)", id, key.Namespace, key.Name))
		}
		return notFound(err, helmReleaseKind, key)
	}
	t := appliedHelmRelease(hr)
	field("In inventory", inInventory(hr.Status.Inventory, id))
	driftText := "none"
	if d := inspect.DriftByObject(hr.Status.Drift)[id.String()]; d != nil {
		driftText = driftTextOf(d, t.Policy)
	}
	field("Drift", driftText)
	fmt.Fprintln(w)

	field("HelmRelease", hr.Namespace+"/"+hr.Name)
	field("Release", hr.GetReleaseNamespace()+"/"+hr.GetReleaseName())
	field("Applied revision", dash(hr.Status.LastAppliedRevision))
	field("Attempted revision", dash(hr.Status.LastAttemptedRevision))
	field("Sync status", syncStatus(t))
	field("Ready", readyLine(hr.Status.Conditions, hr.Spec.Suspend))
	if parent, ok := kustomizationOwner(hr.GetLabels()); ok {
		field("Managed by", kustomizev1.KustomizationKind+"/"+parent.Namespace+"/"+parent.Name)
	}
	fmt.Fprintln(w)

	chartKey := inspect.HelmChartKey(hr)
	if kind := hr.GetChartSourceKind(); kind != sourcev1.HelmChartKind {
		// A chartRef's OCIRepository or ExternalArtifact: the chart's
		// source itself.
		field(kind, chartKey.Namespace+"/"+chartKey.Name)
		srcKind := kindOfRef(kind)
		if srcKind == nil {
			return nil
		}
		src := srcKind.newObj()
		if err := g.client.Get(ctx, chartKey, src); err != nil {
			field("Error", notFound(err, srcKind, chartKey).Error())
			return nil
		}
		field("URL", sourceURL(src))
		s := srcKind.status(src)
		field("Revision", dash(s.revision))
		field("Ready", readyLine(s.conditions, s.suspended))
		return nil
	}
	field(sourcev1.HelmChartKind, chartKey.Namespace+"/"+chartKey.Name)
	chart := &sourcev1.HelmChart{}
	if err := g.client.Get(ctx, chartKey, chart); err != nil {
		field("Error", notFound(err, helmChartKind, chartKey).Error())
		return nil
	}
	field("Chart", chart.Spec.Chart+" "+dash(chart.Spec.Version))
	rev := "-"
	if chart.Status.Artifact != nil {
		rev = chart.Status.Artifact.Revision
	}
	field("Revision", rev)
	field("Ready", readyLine(chart.Status.Conditions, chart.Spec.Suspend))
	fmt.Fprintln(w)

	srcKind, srcKey := chartSourceKey(chart)
	field(chart.Spec.SourceRef.Kind, srcKey.Namespace+"/"+srcKey.Name)
	src := srcKind.newObj()
	if err := g.client.Get(ctx, srcKey, src); err != nil {
		field("Error", notFound(err, srcKind, srcKey).Error())
		return nil
	}
	field("URL", sourceURL(src))
	s := srcKind.status(src)
	field("Revision", dash(s.revision))
	field("Ready", readyLine(s.conditions, s.suspended))
	return nil
}

// kustomizationOwner reads the Kustomization an object's
// kustomize.plumb.dev labels name. It reads those labels only: a
// HelmRelease's objects carry helm.plumb.dev labels, traced apart.
func kustomizationOwner(labels map[string]string) (manage.Owner, bool) {
	name, ok := labels[kustomizev1.NameLabel]
	if !ok {
		return manage.Owner{}, false
	}
	return manage.Owner{Namespace: labels[kustomizev1.NamespaceLabel], Name: name}, true
}

// inInventory says whether an inventory lists id.
func inInventory(inv *kustomizev1.Inventory, id object.ID) string {
	if inv != nil {
		for _, e := range inv.Entries {
			if e.Group == id.Group && e.Kind == id.Kind && e.Namespace == id.Namespace && e.Name == id.Name {
				return "yes"
			}
		}
	}
	return "no (labelled for it, but its inventory does not list it: a sync in progress, or left behind)"
}

// driftTextOf is driftText without the table's "-" for nothing.
func driftTextOf(d *inspect.ObjectDrift, policy kustomizev1.DriftPolicy) string {
	if t := driftText(d, policy); t != "" {
		return t
	}
	return "none"
}

// readyLine renders the Ready condition as Status Reason: message.
func readyLine(conds []metav1.Condition, suspended bool) string {
	c := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	line := "Unknown: waiting to be reconciled"
	if c != nil {
		line = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, oneLine(c.Message))
	}
	if suspended {
		line = "(suspended) " + line
	}
	return line
}

// refText renders a GitRepository's spec.ref.
func refText(r *sourcev1.GitRepositoryRef) string {
	switch {
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Name != "":
		return "name " + r.Name
	case r.SemVer != "":
		return "semver " + r.SemVer
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "":
		return "branch " + r.Branch
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
