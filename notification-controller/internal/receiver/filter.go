package receiver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plumb.dev/notification-controller/internal/celexpr"
)

// filterVars are the variables of spec.resourceFilter, Flux's: the
// resource's metadata and the call's body.
var filterVars = []string{"res", "req"}

// CompileFilter compiles a Receiver's spec.resourceFilter; the reconciler
// refuses the Receiver with its error.
func CompileFilter(expr string) (*celexpr.Program, error) {
	p, err := celexpr.Compile(expr, celexpr.Bool, filterVars...)
	if err != nil {
		return nil, fmt.Errorf("spec.resourceFilter: %w", err)
	}
	return p, nil
}

// filterRequest is req, the call's body as a map: a JSON object when the
// call says it is JSON (Content-Type application/json), as Flux reads it,
// and an empty map otherwise, so a filter on res alone works for any
// sender. A JSON call whose body is not a JSON object is an error.
func filterRequest(header http.Header, body []byte) (map[string]any, error) {
	req := map[string]any{}
	if !isJSON(header) {
		return req, nil
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("spec.resourceFilter reads the body, which is not a JSON object")
	}
	return req, nil
}

// isJSON reports whether one of the Content-Type values is
// application/json.
func isJSON(header http.Header) bool {
	for _, v := range strings.Split(header.Get("Content-Type"), ",") {
		t, _, err := mime.ParseMediaType(strings.TrimSpace(v))
		if err == nil && t == "application/json" {
			return true
		}
	}
	return false
}

// resourceVar is res: the object's apiVersion, kind and metadata, as
// Flux's filter sees them.
func resourceVar(obj *metav1.PartialObjectMetadata) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}
