package manage

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bodyRecorder keeps the body of the apply it is asked for, as the client
// would send it, and answers nothing.
type bodyRecorder struct {
	client.Client
	patchType types.PatchType
	body      []byte
}

func (r *bodyRecorder) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	r.patchType = patch.Type()
	var err error
	r.body, err = patch.Data(obj)
	return err
}

// Apply's body is what client-go's apply request marshals: json.Marshal
// of the apply configuration (util/apply.NewRequest).
func (r *bodyRecorder) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	r.patchType = types.ApplyYAMLPatchType
	var err error
	r.body, err = json.Marshal(obj)
	return err
}

// ApplyMetadata sends Apply's request, byte for byte, and leaves the
// object as it is, managedFields and resourceVersion included.
func TestApplyMetadataSendsApplysBody(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "7",
			"labels":      map[string]any{"app": "web"},
			"annotations": map[string]any{"note": "<b>&</b>", "n": "1"}},
		"spec": map[string]any{"replicas": float64(2), "paused": false, "selector": nil,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "registry.example/web:1.0", "args": []any{"--a=ü", "1e21"}}}}}},
	}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}})
	before := obj.DeepCopy()

	applied := &bodyRecorder{}
	g.Expect(Apply(context.Background(), applied, obj.DeepCopy())).To(Succeed())
	metadata := &bodyRecorder{}
	stored, err := ApplyMetadata(context.Background(), metadata, obj)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(metadata.patchType).To(Equal(types.ApplyPatchType))
	g.Expect(string(metadata.body)).To(Equal(string(applied.body)))
	g.Expect(string(metadata.body)).NotTo(ContainSubstring("resourceVersion"))
	g.Expect(string(metadata.body)).NotTo(ContainSubstring("managedFields"))
	g.Expect(obj).To(Equal(before), "the object was changed")
	g.Expect(stored.GetName()).To(Equal("web"))
	g.Expect(stored.GroupVersionKind()).To(Equal(obj.GroupVersionKind()))
}

// BenchmarkApplyMetadataBody is what ApplyMetadata allocates for one
// Deployment of bench-sync's shape, the request aside (the client only
// keeps the body).
func BenchmarkApplyMetadataBody(b *testing.B) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "deployment-0002", "namespace": "apps",
			"labels": map[string]any{"app.kubernetes.io/name": "bench", "app.kubernetes.io/component": "deployment-0002",
				"kustomize.plumb.dev/name": "app", "kustomize.plumb.dev/namespace": "apps"},
			"annotations": map[string]any{AppliedHashAnnotation: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
		"spec": map[string]any{"replicas": float64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "deployment-0002"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "deployment-0002"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "registry.example/app:1.0",
					"ports":     []any{map[string]any{"containerPort": float64(8080)}},
					"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
				}}}}}}}
	c := &bodyRecorder{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyMetadata(context.Background(), c, obj); err != nil {
			b.Fatal(err)
		}
	}
}
