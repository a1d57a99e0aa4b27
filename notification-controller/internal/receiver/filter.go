package receiver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/celexpr"
)

// filterVars are the variables of spec.resourceFilter, Flux's: the
// resource's metadata and the call's body, and for generic-oidc the
// verified token's claims.
func filterVars(typ string) []string {
	if typ == notificationv1.GenericOIDCReceiver {
		return []string{"res", "req", "claims"}
	}
	return []string{"res", "req"}
}

// CompileFilter compiles the spec.resourceFilter of a Receiver of type
// typ; the reconciler refuses the Receiver with its error. claims is
// declared for generic-oidc only, so another type's filter reading it
// does not compile, as in Flux.
func CompileFilter(expr, typ string) (*celexpr.Program, error) {
	p, err := celexpr.Compile(expr, celexpr.Bool, filterVars(typ)...)
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
