package manage

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply server-side-applies obj in place as sync-controller writes managed
// objects: field manager plumb-sync, taking over fields another manager
// set. obj's managedFields and resourceVersion are cleared first; after
// the call obj holds what the API server answered. opts add to these, e.g.
// client.DryRunAll.
func Apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(FieldManager), client.ForceOwnership)
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...)
}

// ApplyMetadata is Apply for a caller that needs only the metadata of what
// the API server stored (its resourceVersion, generation and managedFields),
// not the object: the answer is asked for as PartialObjectMetadata, which
// the API server sends in protobuf, so it neither encodes nor this process
// decodes the whole object as JSON (spec, data, defaults). The request is
// Apply's, byte for byte the same body, and obj is left as it is: it is
// copied only when it carries managedFields or a resourceVersion, which
// the body must not.
func ApplyMetadata(ctx context.Context, c client.Client, obj *unstructured.Unstructured, opts ...client.PatchOption) (*metav1.PartialObjectMetadata, error) {
	body := obj
	if obj.GetResourceVersion() != "" || obj.GetManagedFields() != nil {
		body = obj.DeepCopy()
		body.SetManagedFields(nil)
		body.SetResourceVersion("")
	}
	// json.Marshal of the map is the bytes client-go's apply request
	// sends for Apply (json.Marshal of the apply configuration, whose
	// MarshalJSON it compacts); the object's own MarshalJSON adds a
	// newline and one copy (TestApplyMetadataSendsApplysBody).
	data, err := json.Marshal(body.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	stored := &metav1.PartialObjectMetadata{}
	stored.SetGroupVersionKind(obj.GroupVersionKind())
	stored.SetNamespace(obj.GetNamespace())
	stored.SetName(obj.GetName())
	opts = append(opts, client.FieldOwner(FieldManager), client.ForceOwnership)
	if err := c.Patch(ctx, stored, client.RawPatch(types.ApplyPatchType, data), opts...); err != nil {
		return nil, err
	}
	return stored, nil
}
