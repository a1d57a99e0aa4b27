package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

// variables resolves spec.postBuild into render variables. ConfigMaps and
// Secrets are read in the order of substituteFrom, a later one winning, and
// spec.postBuild.substitute wins over them all (Flux's precedence). Values
// from Secrets are marked secret so pkg/render never shows them.
func (r *KustomizationReconciler) variables(ctx context.Context, obj *kustomizev1.Kustomization) (render.Variables, error) {
	pb := obj.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	vars := render.Variables{}
	for _, ref := range pb.SubstituteFrom {
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
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

// cacheKey hashes everything a render depends on besides the source bytes
// themselves (named by their digest): the spec's generation, the variables
// with their values and the controller's options. Values never leave the
// process: only the hash is kept, in memory.
func cacheKey(sourceDigest string, generation int64, vars render.Variables, strict bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "source=%s\ngeneration=%d\nstrict=%t\n", sourceDigest, generation, strict)
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := vars[k]
		fmt.Fprintf(h, "%d:%s=%d:%s:%t\n", len(k), k, len(v.Value), v.Value, v.Secret)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hexOf returns the hex part of "sha256:<hex>".
func hexOf(digest string) string {
	_, h, _ := strings.Cut(digest, ":")
	return h
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
