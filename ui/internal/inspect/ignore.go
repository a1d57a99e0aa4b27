package inspect

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/object"
)

// maxPath bounds a path in an ignore request, maxManager a field
// manager's name.
const (
	maxPath    = 1024
	maxManager = 128
)

// uiFieldManager is the field manager of the UI's writes.
var uiFieldManager = kinds.FieldManager("ui")

// ignoreRequest is the body of POST .../ignore.
type ignoreRequest struct {
	// ID is the object's pkg/object ID text.
	ID string `json:"id"`
	// Path is a changed field as the diff names it (spec.replicas) or a
	// JSON pointer (/spec/replicas).
	Path string `json:"path"`
	// Apply patches the rule into the object, with the user's identity.
	Apply bool `json:"apply"`
	// As is the rule's form: "path" (the default: a JSON pointer), "jq"
	// (a jq path expression that finds list elements by their name, read
	// from the live object) or "manager" (every field Manager writes).
	As string `json:"as,omitempty"`
	// Manager is the field manager of the changed field, for As "manager".
	Manager string `json:"manager,omitempty"`
}

// The forms of an ignore rule the page offers.
const (
	ruleAsPath    = "path"
	ruleAsJQ      = "jq"
	ruleAsManager = "manager"
)

// ignoreAnswer is the rule, as YAML to commit to Git.
type ignoreAnswer struct {
	// YAML is the object's ignore rules with the new one, in the kind's
	// own API: the part of the manifest to commit.
	YAML string `json:"yaml"`
	// Rule is the new rule alone.
	Rule kustomizev1.IgnoreRule `json:"rule"`
	// MayApply says whether the user may patch the object (a
	// SelfSubjectAccessReview): the page offers to apply the rule then.
	MayApply bool `json:"mayApply"`
	// Applied says the rule was patched into the object.
	Applied bool `json:"applied"`
	// Note says what to know about applying it.
	Note string `json:"note,omitempty"`
}

// appliedNote warns that a rule patched into the object is not in Git.
const appliedNote = "the rule is in the cluster only: commit the YAML, or a sync of whatever applies this object from Git reverts it"

func (h *handlers) ignore(r *request) (any, error) {
	var body ignoreRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, badRequest("the body must be {\"id\", \"path\", \"apply\"}: %v", err)
	}
	id, err := object.ParseText(body.ID)
	if err != nil {
		return nil, badRequest("id: %v", err)
	}
	pointer, err := pointerOf(body.Path)
	if err != nil {
		return nil, err
	}
	rule := kustomizev1.IgnoreRule{
		// The name is a regular expression matched against the whole name.
		Target: &kustomizev1.Selector{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace, Name: regexp.QuoteMeta(id.Name)},
	}
	switch body.As {
	case "", ruleAsPath:
		rule.Paths = []string{pointer}
	case ruleAsJQ:
		live, err := h.liveOf(r, id)
		if err != nil {
			return nil, err
		}
		rule.JQPathExpressions = []string{jqPathOf(body.Path, live)}
	case ruleAsManager:
		if body.Manager == "" || len(body.Manager) > maxManager || strings.ContainsAny(body.Manager, "\n\r\x00") {
			return nil, badRequest("manager must name the field manager, at most %d bytes", maxManager)
		}
		rule.ManagedFieldsManagers = []string{body.Manager}
	default:
		return nil, badRequest("as must be %q, %q or %q", ruleAsPath, ruleAsJQ, ruleAsManager)
	}
	if _, err := diff.NewIgnorer([]kustomizev1.IgnoreRule{rule}); err != nil {
		return nil, badRequest("path: %v", err)
	}

	var rules []kustomizev1.IgnoreRule
	var fragment func([]kustomizev1.IgnoreRule) map[string]any
	switch o := r.obj.(type) {
	case *kustomizev1.Kustomization:
		rules = o.Spec.Ignore
		fragment = func(rs []kustomizev1.IgnoreRule) map[string]any {
			return map[string]any{"spec": map[string]any{"ignore": rs}}
		}
	case *helmv2.HelmRelease:
		if o.Spec.DriftDetection != nil {
			rules = o.Spec.DriftDetection.Ignore
		}
		fragment = func(rs []kustomizev1.IgnoreRule) map[string]any {
			return map[string]any{"spec": map[string]any{"driftDetection": map[string]any{"ignore": rs}}}
		}
	default:
		return nil, notFound("a %s has no drift ignore rules", r.kind.GVK.Kind)
	}
	if !containsRule(rules, rule) {
		rules = append(append([]kustomizev1.IgnoreRule{}, rules...), rule)
	}
	manifest := fragment(rules)
	// A typed object read from the API server carries no type metadata.
	manifest["apiVersion"] = r.kind.GVK.GroupVersion().String()
	manifest["kind"] = r.kind.GVK.Kind
	manifest["metadata"] = map[string]any{"name": r.obj.GetName(), "namespace": r.obj.GetNamespace()}
	text, err := yaml.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	out := ignoreAnswer{YAML: string(text), Rule: rule}
	if !body.Apply {
		out.MayApply = mayPatch(r)
		return out, nil
	}
	// A merge patch replaces the list whole; the resourceVersion makes it
	// fail (409) rather than drop a rule written meanwhile.
	patch := fragment(rules)
	patch["metadata"] = map[string]any{"resourceVersion": r.obj.GetResourceVersion()}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	if err := r.client.Patch(r.Context(), r.obj, client.RawPatch(types.MergePatchType, data), client.FieldOwner(uiFieldManager)); err != nil {
		return nil, err
	}
	out.MayApply, out.Applied, out.Note = true, true, appliedNote
	return out, nil
}

// mayPatch asks the API server whether the user may patch the object. A
// review that fails answers yes: the patch itself is then the API
// server's to refuse, and its 403 passes through.
func mayPatch(r *request) bool {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: r.obj.GetNamespace(), Verb: "patch",
			Group: r.kind.Group(), Resource: r.kind.Resource, Name: r.obj.GetName()},
	}}
	if err := r.client.Create(r.Context(), review); err != nil {
		return true
	}
	return review.Status.Allowed
}

// pointerOf validates a path from the request and returns its JSON pointer.
func pointerOf(path string) (string, error) {
	switch {
	case path == "":
		return "", badRequest("path is required")
	case len(path) > maxPath:
		return "", badRequest("path is longer than %d bytes", maxPath)
	case strings.ContainsAny(path, "\n\r\x00"):
		return "", badRequest("path holds a control character")
	}
	pointer := path
	if !strings.HasPrefix(path, "/") {
		pointer = diff.PointerOf(path)
	}
	if _, err := diff.ParsePointer(pointer); err != nil || pointer == "/" || pointer == "" {
		return "", badRequest("path %q is not a field path or JSON pointer", path)
	}
	return pointer, nil
}

// containsRule says whether rules hold rule already.
func containsRule(rules []kustomizev1.IgnoreRule, rule kustomizev1.IgnoreRule) bool {
	for _, r := range rules {
		if reflect.DeepEqual(r, rule) {
			return true
		}
	}
	return false
}
