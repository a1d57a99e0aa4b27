package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// finalizerPolicy is the install's admission policy that adds
// sync-controller's finalizer at create (deploy/sync-controller).
const finalizerPolicy = "deploy/sync-controller/finalizer-policy.yaml"

// installAdmissionPolicies creates the install's admission policies, as
// `kubectl apply -k deploy/` would, and waits until the API server applies
// them: the policy plugin picks a new policy up from its informer a moment
// after the create, and a Kustomization created before that would start
// without the finalizer (still correct, sync-controller adds it, but not
// the cluster the install makes).
func (e *Env) installAdmissionPolicies(ctx context.Context) error {
	data, err := os.ReadFile(filepath.Join(e.Root, filepath.FromSlash(finalizerPolicy)))
	if err != nil {
		return err
	}
	objs, err := DecodeYAML(data)
	if err != nil {
		return fmt.Errorf("%s: %w", finalizerPolicy, err)
	}
	for _, u := range objs {
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("plumb-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: creating %s %s: %w", finalizerPolicy, u.GetKind(), u.GetName(), err)
		}
	}
	return e.waitFinalizerPolicy(ctx)
}

// waitFinalizerPolicy creates a Kustomization in a dry run until the answer
// carries the finalizer.
func (e *Env) waitFinalizerPolicy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		probe := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "admission-probe"},
			Spec: kustomizev1.KustomizationSpec{
				Interval:  metav1.Duration{Duration: time.Hour},
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "probe"},
			},
		}
		err := e.Client.Create(ctx, probe, client.DryRunAll)
		if err == nil && slices.Contains(probe.Finalizers, kustomizev1.SyncFinalizer) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not apply %s within 30s (last dry-run create: %v, finalizers %v)", finalizerPolicy, err, probe.Finalizers)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
