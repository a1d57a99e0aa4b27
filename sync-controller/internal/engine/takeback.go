package engine

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/manage"
)

// kubectlManagers are the field managers whose fields Flux's ssa: Override
// takes back: kubectl's server-side apply ("kubectl", Apply), its
// client-side apply and edits of old ("kubectl", Update;
// "before-first-apply"), and the client-side apply of kubectl since 1.18
// ("kubectl-client-side-apply"), the manager `kubectl apply` writes today.
var kubectlManagers = []metav1.ManagedFieldsEntry{
	{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
	{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate},
	{Manager: "before-first-apply", Operation: metav1.ManagedFieldsOperationUpdate},
	{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate},
}

// lastAppliedAnnotation is client-side kubectl apply's record of what it
// applied; Override removes it with kubectl's fields.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// takeBackKubectlFields makes plumb-sync the owner of the fields kubectl
// set on live when desired asks for Flux's ssa: Override written out: the
// kubectl entries of its managed fields are merged into plumb-sync's apply
// entry, so that the next apply, which does not set them, removes them
// (the server drops fields their only applier stops sending), and the
// last-applied annotation goes too. Without the annotation (Plumb's
// default, Flux's Merge) fields others add are left alone. It reports
// whether it wrote; the write is conditional on live's resource version.
func (e *Engine) takeBackKubectlFields(ctx context.Context, desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata) (bool, error) {
	if !flux.TakesBackKubectlFields(desired) {
		return false, nil
	}
	_, lastApplied := live.Annotations[lastAppliedAnnotation]
	if !lastApplied && !hasKubectlEntry(live.ManagedFields) {
		return false, nil
	}
	// live is the watch cache's, which keeps only a digest of each field
	// set (digestManagedFields): the sets to merge are read from the API
	// server, on this path alone, and the patch is conditional on that
	// read's resource version.
	live = metadataObject(desired.GroupVersionKind())
	if err := e.client.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false, fmt.Errorf("reading the fields kubectl set (%s: %s): %w", flux.SSAKey, flux.Override, err)
	}
	entries, changed, err := handOver(live.ManagedFields)
	_, lastApplied = live.Annotations[lastAppliedAnnotation]
	if err != nil || (!changed && !lastApplied) {
		return false, err
	}
	meta := map[string]any{"resourceVersion": live.ResourceVersion}
	if changed {
		meta["managedFields"] = entries
	}
	if lastApplied {
		meta["annotations"] = map[string]any{lastAppliedAnnotation: nil}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(desired.GroupVersionKind())
	obj.SetNamespace(desired.GetNamespace())
	obj.SetName(desired.GetName())
	if err := e.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(manage.FieldManager)); err != nil {
		return false, fmt.Errorf("taking back the fields kubectl set (%s: %s): %w", flux.SSAKey, flux.Override, err)
	}
	return true, nil
}

// handOver returns entries with those of kubectlManagers merged into
// plumb-sync's apply entry (which is made when there is none); changed is
// false when there was nothing of kubectl's.
func handOver(entries []metav1.ManagedFieldsEntry) (out []metav1.ManagedFieldsEntry, changed bool, err error) {
	taken := &fieldpath.Set{}
	ours := -1
	var apiVersion string
	for _, e := range entries {
		if e.Subresource == "" && isKubectl(e) {
			set := &fieldpath.Set{}
			if e.FieldsV1 != nil {
				if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
					return nil, false, fmt.Errorf("reading the fields of %s: %w", e.Manager, err)
				}
			}
			taken = taken.Union(set)
			apiVersion = e.APIVersion
			changed = true
			continue
		}
		if e.Subresource == "" && e.Manager == manage.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			ours = len(out)
		}
		out = append(out, e)
	}
	if !changed {
		return entries, false, nil
	}
	if ours < 0 {
		out = append(out, metav1.ManagedFieldsEntry{Manager: manage.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: apiVersion, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{}")})
		ours = len(out) - 1
	}
	set := &fieldpath.Set{}
	if f := out[ours].FieldsV1; f != nil {
		if err := set.FromJSON(f.GetRawReader()); err != nil {
			return nil, false, fmt.Errorf("reading the fields of %s: %w", manage.FieldManager, err)
		}
	}
	raw, err := set.Union(taken).ToJSON()
	if err != nil {
		return nil, false, err
	}
	now := metav1.Now()
	out[ours].FieldsV1, out[ours].Time = metav1.NewFieldsV1(string(raw)), &now
	return out, true, nil
}

// hasKubectlEntry reports whether any entry is one of kubectlManagers' on
// the object itself: whether handOver would have something to take.
func hasKubectlEntry(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if e.Subresource == "" && isKubectl(e) {
			return true
		}
	}
	return false
}

func isKubectl(e metav1.ManagedFieldsEntry) bool {
	for _, k := range kubectlManagers {
		if e.Manager == k.Manager && e.Operation == k.Operation {
			return true
		}
	}
	return false
}

// takeBackIfAsked is takeBackKubectlFields for an object that exists.
func (e *Engine) takeBackIfAsked(ctx context.Context, desired *unstructured.Unstructured, live *metav1.PartialObjectMetadata) (bool, error) {
	if live == nil {
		return false, nil
	}
	return e.takeBackKubectlFields(ctx, desired, live)
}
