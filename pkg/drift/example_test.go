package drift_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/drift"
)

// Someone scaled the Deployment with `kubectl edit`: its managedFields say
// who owns the drifted field.
func ExampleManagerOf() {
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("apps/v1")
	live.SetKind("Deployment")
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "plumb-sync", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}}}`)},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
	})
	fmt.Printf("spec.replicas: %q\n", drift.ManagerOf(live, "spec.replicas"))
	fmt.Printf("image: %q\n", drift.ManagerOf(live, "spec.template.spec.containers[0].image"))
	// Output:
	// spec.replicas: "kubectl-edit"
	// image: ""
}
