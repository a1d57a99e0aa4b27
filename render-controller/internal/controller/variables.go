package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/postbuild"
	"plumb.dev/pkg/render"
)

// variables resolves spec.postBuild into render variables (pkg/postbuild,
// which `plumb build` shares). Values from Secrets are marked secret so
// pkg/render never shows them.
func (r *KustomizationReconciler) variables(ctx context.Context, obj *kustomizev1.Kustomization) (render.Variables, error) {
	return postbuild.Variables(ctx, r.Client, obj)
}

// cacheKey hashes everything a render depends on besides the source bytes
// themselves (named by their digest): the spec's generation, the variables
// with their values, the decryption keys' hash and the controller's
// options. Values never leave the process: only the hash is kept, in
// memory.
func cacheKey(sourceDigest string, generation int64, vars render.Variables, strict bool, keysDigest string) string {
	h := sha256.New()
	fmt.Fprintf(h, "source=%s\ngeneration=%d\nstrict=%t\nkeys=%s\n", sourceDigest, generation, strict, keysDigest)
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
