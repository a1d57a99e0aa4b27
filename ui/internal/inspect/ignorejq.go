package inspect

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/object"
)

// liveOf reads the managed object id with the user's own client, its
// version from the inventory; nil when it does not exist.
func (h *handlers) liveOf(r *request, id object.ID) (map[string]any, error) {
	a, ok := inspect.AppliedOf(r.obj)
	if !ok {
		return nil, notFound("a %s applies no objects", r.kind.GVK.Kind)
	}
	gvk, known := versionOf(a, nil, id)
	if !known {
		return nil, notFound("%s is not in the inventory of %s/%s/%s", id, a.Kind, r.obj.GetNamespace(), r.obj.GetName())
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	switch err := r.client.Get(r.Context(), client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, live); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return live.Object, nil
}

// identifier is a key jq reads after a dot.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jqPathOf turns a diff path (spec.template.spec.containers[0].image) into
// a jq path expression that survives a reordered list: an element of a
// list that has a name in the live object is selected by it
// (.spec.template.spec.containers[] | select(.name == "app") | .image), as
// Argo CD's documentation writes such rules; other elements keep their
// index. Keys that are no identifiers are quoted (.metadata.annotations["a/b"]).
func jqPathOf(path string, live map[string]any) string {
	var b strings.Builder
	var cur any = live
	piped := true // at the start of a jq term: a key needs its dot
	for _, e := range diff.ParsePath(path) {
		if !e.IsIndex {
			switch {
			case identifier.MatchString(e.Key):
				b.WriteString("." + e.Key)
			case piped:
				b.WriteString(".[" + jsonString(e.Key) + "]")
			default:
				b.WriteString("[" + jsonString(e.Key) + "]")
			}
			piped = false
			m, _ := cur.(map[string]any)
			cur = m[e.Key]
			continue
		}
		list, _ := cur.([]any)
		cur = nil
		if e.Index >= 0 && e.Index < len(list) {
			cur = list[e.Index]
		}
		if name, ok := nameOf(cur); ok {
			b.WriteString("[] | select(.name == " + jsonString(name) + ") | ")
			piped = true
			continue
		}
		b.WriteString("[" + strconv.Itoa(e.Index) + "]")
		piped = false
	}
	return strings.TrimSuffix(b.String(), " | ")
}

// nameOf is a list element's name field, when it is a string.
func nameOf(element any) (string, bool) {
	m, ok := element.(map[string]any)
	if !ok {
		return "", false
	}
	name, ok := m["name"].(string)
	return name, ok
}

// jsonString quotes s as a JSON string, which jq reads as its own.
func jsonString(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}
