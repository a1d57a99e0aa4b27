package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	setv1 "plumb.dev/api/set/v1"
)

// UninstallOptions say what Uninstall leaves.
type UninstallOptions struct {
	// KeepNamespace leaves Namespace (and what else is in it that Plumb
	// did not install) in place.
	KeepNamespace bool
	// DryRun prints what would be deleted and changes nothing (every
	// write is a server-side dry run, so RBAC and admission still answer).
	DryRun bool
}

// Uninstall removes Plumb from the cluster in the order that leaves every
// workload Plumb applied running, as `flux uninstall` does:
//
//  0. every Kustomization, HelmRelease and ObjectSet suspended: a Plumb
//     bootstrapped to manage itself holds its own Deployments in Git, and
//     sync-controller, which corrects drift as it happens, would put back
//     each Deployment step 1 deletes before its own pods stop;
//  1. the controllers' Deployments, and the wait until their pods are
//     gone: no controller may see a Kustomization or HelmRelease being
//     deleted, since sync-controller would then prune its objects;
//     sync-controller's MutatingAdmissionPolicy goes too, or it would
//     put back the finalizer step 2 takes away; then the rest of the
//     install in Namespace (Services, ConfigMaps, ServiceAccounts,
//     NetworkPolicies, NATS; the Secret nats-credentials and NATS's
//     volume stay, for a later install, unless the namespace goes) and
//     its ClusterRoles and ClusterRoleBindings;
//  2. every finalizer of every object of Plumb's kinds, in every
//     namespace, so that their deletion waits for no controller;
//  3. Plumb's CRDs, which deletes those objects and nothing they applied
//     (Plumb sets no owner references on what it applies);
//  4. Namespace, unless KeepNamespace.
//
// Each step prints a line per object. It goes on past a failed object and
// returns every failure at the end.
func Uninstall(ctx context.Context, c client.Client, o UninstallOptions, out io.Writer) error {
	u := &uninstaller{c: c, out: out, dryRun: o.DryRun}
	if o.DryRun {
		u.suffix = " (dry run)"
	}
	fmt.Fprintf(out, "► suspending what the controllers apply\n")
	for _, k := range suspendFirst {
		u.suspendAll(ctx, k)
	}
	fmt.Fprintf(out, "► deleting the controllers in %s\n", Namespace)
	u.deleteControllers(ctx)
	if !u.waitControllersGone(ctx) {
		return fmt.Errorf("uninstall stopped with the controllers still running: %w", errors.Join(u.errs...))
	}
	fmt.Fprintf(out, "► deleting the rest of the install\n")
	for _, k := range []schema.GroupVersionKind{
		gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding"),
		gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy"),
		gvk("apps", "v1", "StatefulSet"),
		gvk("", "v1", "Service"),
		gvk("", "v1", "ConfigMap"),
		gvk("networking.k8s.io", "v1", "NetworkPolicy"),
		gvk("policy", "v1", "PodDisruptionBudget"),
		gvk("", "v1", "ServiceAccount"),
		gvk("rbac.authorization.k8s.io", "v1", "RoleBinding"),
		gvk("rbac.authorization.k8s.io", "v1", "Role"),
		gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
		gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
	} {
		u.deleteAll(ctx, k, Namespace)
	}
	crds := u.plumbCRDs(ctx)
	fmt.Fprintf(out, "► removing the finalizers of Plumb's objects in every namespace\n")
	for _, crd := range crds {
		u.removeFinalizers(ctx, crd)
	}
	fmt.Fprintf(out, "► deleting Plumb's CRDs\n")
	for _, crd := range crds {
		u.delete(ctx, crd)
	}
	if !o.KeepNamespace {
		fmt.Fprintf(out, "► deleting the namespace\n")
		ns := &unstructured.Unstructured{}
		ns.SetGroupVersionKind(gvk("", "v1", "Namespace"))
		ns.SetName(Namespace)
		u.delete(ctx, ns)
	}
	if len(u.errs) > 0 {
		return fmt.Errorf("uninstall left %d failure(s): %w", len(u.errs), errors.Join(u.errs...))
	}
	fmt.Fprintf(out, "✔ uninstall finished%s\n", u.suffix)
	return nil
}

type uninstaller struct {
	c      client.Client
	out    io.Writer
	dryRun bool
	suffix string
	errs   []error
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

func (u *uninstaller) fail(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	u.errs = append(u.errs, err)
	fmt.Fprintf(u.out, "✗ %v\n", err)
}

// suspendFirst are the kinds whose controllers write into the cluster what
// Git holds (step 0 of Uninstall).
var suspendFirst = []schema.GroupVersionKind{
	kustomizev1.GroupVersion.WithKind("Kustomization"),
	helmv2.GroupVersion.WithKind("HelmRelease"),
	setv1.GroupVersion.WithKind("ObjectSet"),
}

// suspendAll sets spec.suspend on every object of kind in every namespace
// that is not suspended yet. A merge patch under the CLI's own field
// manager: sync-controller's applies of an object Git holds (a
// self-managed Kustomization) never set the field, so they leave it.
func (u *uninstaller) suspendAll(ctx context.Context, kind schema.GroupVersionKind) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := u.c.List(ctx, list); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return
		}
		u.fail("listing %ss: %v", kind.Kind, err)
		return
	}
	for i := range list.Items {
		obj := &list.Items[i]
		if suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); suspended {
			continue
		}
		opts := []client.PatchOption{}
		if u.dryRun {
			opts = append(opts, client.DryRunAll)
		}
		err := u.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)), opts...)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			u.fail("suspending %s: %v", Ref(obj), err)
		default:
			fmt.Fprintf(u.out, "✔ %s suspended%s\n", Ref(obj), u.suffix)
		}
	}
}

// deleteAll deletes the objects of kind labelled part of Plumb, in ns
// when the kind is namespaced (cluster-scoped kinds ignore it). A kind
// the API server does not serve (MutatingAdmissionPolicy before 1.36) is
// skipped.
func (u *uninstaller) deleteAll(ctx context.Context, kind schema.GroupVersionKind, ns string) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabels{PartOfLabel: PartOf}}
	if namespaced, err := u.c.IsObjectNamespaced(&unstructured.Unstructured{Object: map[string]any{"apiVersion": kind.GroupVersion().String(), "kind": kind.Kind}}); err == nil && namespaced {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := u.c.List(ctx, list, opts...); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return
		}
		u.fail("listing %ss: %v", kind.Kind, err)
		return
	}
	for i := range list.Items {
		u.delete(ctx, &list.Items[i])
	}
}

func isNoMatch(err error) bool {
	return strings.Contains(err.Error(), "no matches for kind")
}

// delete deletes obj in the background (its dependents, such as a
// Deployment's ReplicaSets, go after it), or as a dry run.
func (u *uninstaller) delete(ctx context.Context, obj client.Object) {
	opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
	if u.dryRun {
		opts = append(opts, client.DryRunAll)
	}
	err := u.c.Delete(ctx, obj, opts...)
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		u.fail("deleting %s: %v", Ref(kindOf(obj)), err)
	default:
		fmt.Fprintf(u.out, "✔ %s deleted%s\n", Ref(kindOf(obj)), u.suffix)
	}
}

// kindOf gives obj's Ref its kind, which typed objects read from the API
// server leave empty.
func kindOf(obj client.Object) interface {
	GetKind() string
	GetNamespace() string
	GetName() string
} {
	return refOf{obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName()}
}

type refOf struct{ kind, ns, name string }

func (r refOf) GetKind() string      { return r.kind }
func (r refOf) GetNamespace() string { return r.ns }
func (r refOf) GetName() string      { return r.name }

// controllerPods selects the pods of the Deployments step 1 deletes
// (their template labels).
var controllerPods = append(slices.Clone(Controllers), Extras...)

// waitControllersGone waits until no pod of a controller runs in
// Namespace, so that none acts on what the next steps do, and says
// whether they are gone. A dry run does not wait (nothing was deleted).
func (u *uninstaller) waitControllersGone(ctx context.Context) bool {
	if u.dryRun {
		return true
	}
	sel := fmt.Sprintf("app.kubernetes.io/name in (%s)", strings.Join(controllerPods, ","))
	opts := &client.ListOptions{Namespace: Namespace}
	ls, err := metav1.ParseToLabelSelector(sel)
	if err != nil {
		u.fail("%v", err)
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		u.fail("%v", err)
		return false
	}
	opts.LabelSelector = s
	announced := false
	for {
		pods := &unstructured.UnstructuredList{}
		pods.SetGroupVersionKind(gvk("", "v1", "PodList"))
		if err := u.c.List(ctx, pods, opts); err != nil {
			u.fail("listing the controllers' pods: %v", err)
			return false
		}
		if len(pods.Items) == 0 {
			if announced {
				fmt.Fprintf(u.out, "✔ the controllers' pods are gone\n")
			}
			return true
		}
		if !announced {
			fmt.Fprintf(u.out, "◎ waiting for %d controller pod(s) to stop\n", len(pods.Items))
			announced = true
		}
		select {
		case <-ctx.Done():
			// Going on would let a controller still running prune what a
			// deleted Kustomization applied.
			u.fail("the controllers' pods did not stop: %v; nothing else is deleted", ctx.Err())
			return false
		case <-time.After(pollInterval):
		}
	}
}

// deleteControllers deletes the Deployments in Namespace labelled part of
// Plumb or whose pods are a controller's (a shard of components/sharding,
// the ui of an overlay applied with kubectl, which may lack the label on
// the Deployment itself): every pod waitControllersGone waits for.
func (u *uninstaller) deleteControllers(ctx context.Context) {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(gvk("apps", "v1", "DeploymentList"))
	if err := u.c.List(ctx, &list, client.InNamespace(Namespace)); err != nil {
		u.fail("listing the Deployments in %s: %v", Namespace, err)
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		pod, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "labels", "app.kubernetes.io/name")
		if d.GetLabels()[PartOfLabel] == PartOf || slices.Contains(controllerPods, pod) {
			u.delete(ctx, d)
		}
	}
}

// plumbCRDs lists the CRDs of Plumb's API groups (*.plumb.dev), whoever
// installed them.
func (u *uninstaller) plumbCRDs(ctx context.Context) []*unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinitionList"))
	if err := u.c.List(ctx, list); err != nil {
		u.fail("listing CustomResourceDefinitions: %v", err)
		return nil
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		group, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "group")
		if group == "plumb.dev" || strings.HasSuffix(group, ".plumb.dev") {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// removeFinalizers takes every finalizer off every object of crd's kind.
// All of them, as Flux does: the controllers that would have removed
// theirs are gone, and one left would keep the CRD's deletion waiting.
func (u *uninstaller) removeFinalizers(ctx context.Context, crd *unstructured.Unstructured) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	version := servedVersion(crd)
	if version == "" {
		return
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk(group, version, kind+"List"))
	// Uncached and in every namespace.
	if err := u.c.List(ctx, list); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return
		}
		u.fail("listing %ss: %v", kind, err)
		return
	}
	for i := range list.Items {
		obj := &list.Items[i]
		if len(obj.GetFinalizers()) == 0 {
			continue
		}
		err := u.clearFinalizers(ctx, obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			u.fail("removing the finalizers of %s: %v", Ref(obj), err)
		default:
			fmt.Fprintf(u.out, "✔ %s: finalizers removed%s\n", Ref(obj), u.suffix)
		}
	}
}

// clearFinalizers patches obj's finalizers away until they stay away.
// sync-controller's MutatingAdmissionPolicy, deleted a moment before, puts
// its finalizer back on an UPDATE until the API server's admission has
// seen the deletion, which it learns from a watch, not at once: the patch
// is repeated while the answer still carries a finalizer.
func (u *uninstaller) clearFinalizers(ctx context.Context, obj *unstructured.Unstructured) error {
	for {
		// A merge patch that sets the list empty, guarded by the
		// resourceVersion read: a conflict is reported, not overwritten.
		patch := fmt.Appendf(nil, `{"metadata":{"finalizers":null,"resourceVersion":%q}}`, obj.GetResourceVersion())
		opts := []client.PatchOption{}
		if u.dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := u.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), opts...); err != nil {
			return err
		}
		if u.dryRun || len(obj.GetFinalizers()) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("finalizers %v put back on each removal (an admission policy or webhook?): %w", obj.GetFinalizers(), ctx.Err())
		case <-time.After(pollInterval / 4):
		}
	}
}

// servedVersion is the storage version of crd, else any served one.
func servedVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	served := ""
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if s, _ := m["storage"].(bool); s {
			return name
		}
		if s, _ := m["served"].(bool); s && served == "" {
			served = name
		}
	}
	return served
}
