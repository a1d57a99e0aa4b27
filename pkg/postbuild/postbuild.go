// Package postbuild gathers a Kustomization's postBuild variables from the
// cluster, the one way render-controller and `plumb build` both read them:
// spec.postBuild.substituteFrom ConfigMaps and Secrets in order (a later
// one wins), then spec.postBuild.substitute, which wins over them all
// (Flux's precedence). Values read from Secrets are marked secret, so
// pkg/render never shows them.
package postbuild

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

// Variables resolves ks.Spec.PostBuild into render variables, reading the
// substituteFrom objects in ks's namespace through r. It returns nil when
// postBuild is not set. A missing object that is not optional, a kind other
// than ConfigMap or Secret, and a key that is not a valid variable name are
// errors (render-controller's SubstituteFailed).
func Variables(ctx context.Context, r client.Reader, ks *kustomizev1.Kustomization) (render.Variables, error) {
	pb := ks.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	vars := render.Variables{}
	for _, ref := range pb.SubstituteFrom {
		key := types.NamespacedName{Namespace: ks.Namespace, Name: ref.Name}
		var data map[string]string
		secret := false
		switch ref.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := r.Get(ctx, key, &cm); err != nil {
				if apierrors.IsNotFound(err) && ref.Optional {
					continue
				}
				return nil, substituteFromErr(ref, key, err)
			}
			data = cm.Data
		case "Secret":
			var s corev1.Secret
			if err := r.Get(ctx, key, &s); err != nil {
				if apierrors.IsNotFound(err) && ref.Optional {
					continue
				}
				return nil, substituteFromErr(ref, key, err)
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
			secret = true
		default:
			return nil, fmt.Errorf("postBuild.substituteFrom kind %q is neither ConfigMap nor Secret", ref.Kind)
		}
		for k, v := range data {
			if !render.ValidName(k) {
				return nil, fmt.Errorf("%s %s (postBuild.substituteFrom) has key %q, which is not a valid variable name", ref.Kind, key, k)
			}
			vars[k] = render.Variable{Value: v, Secret: secret}
		}
	}
	for k, v := range pb.Substitute {
		vars[k] = render.Variable{Value: v}
	}
	return vars, nil
}

func substituteFromErr(ref kustomizev1.SubstituteReference, key types.NamespacedName, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s (postBuild.substituteFrom) not found; set optional: true to build without it", ref.Kind, key)
	}
	return fmt.Errorf("reading %s %s (postBuild.substituteFrom): %w", ref.Kind, key, err)
}
