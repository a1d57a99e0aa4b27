package manage

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
