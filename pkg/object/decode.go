package object

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// DecodeManifests reads a rendered manifests artifact (a multi-document
// YAML stream) into objects, skipping empty documents. Each object must have apiVersion, kind and a name.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rendered manifests, document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || (obj.GetName() == "" && obj.GetGenerateName() == "") {
			return nil, fmt.Errorf("rendered manifests, document %d: apiVersion, kind and metadata.name are required", i)
		}
		objs = append(objs, obj)
	}
}
