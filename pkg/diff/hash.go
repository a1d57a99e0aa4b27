package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/object"
)

// Hash returns "sha256:<hex>" over the canonical JSON of the normalized
// desired object. encoding/json writes map keys sorted and the same number
// the same way whatever its Go type, so the digest depends only on content:
// key order in the manifest, status, and server-owned metadata do not
// change it, while any field sync-controller would apply does.
func Hash(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", fmt.Errorf("hash of a nil object")
	}
	b, err := json.Marshal(Normalize(obj).Object)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", object.IDOf(obj), err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
