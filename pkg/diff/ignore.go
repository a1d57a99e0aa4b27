package diff

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Ignorer removes the fields named by a Kustomization's spec.ignore rules.
// The zero value and nil ignore nothing.
type Ignorer struct {
	rules []ignoreRule
}

type ignoreRule struct {
	pointers []Pointer
	jq       []*jqPath
	managers map[string]bool
	target   *selector
}

type selector struct {
	group, version, kind, namespace string
	name                            *regexp.Regexp
	labels, annotations             labels.Selector
}

// NewIgnorer compiles ignore rules. A bad pointer, name pattern or selector
// expression is an error that names the rule (spec.ignore[i]) and the field,
// so it can go into a Stalled condition as it is.
func NewIgnorer(rules []kustomizev1.IgnoreRule) (*Ignorer, error) {
	ig := &Ignorer{}
	for i, r := range rules {
		if len(r.Paths) == 0 && len(r.JQPathExpressions) == 0 && len(r.ManagedFieldsManagers) == 0 {
			return nil, fmt.Errorf("spec.ignore[%d]: paths, jqPathExpressions or managedFieldsManagers is required", i)
		}
		rule := ignoreRule{}
		for j, expr := range r.JQPathExpressions {
			jq, err := compileJQPath(expr)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].jqPathExpressions[%d]: %w", i, j, err)
			}
			rule.jq = append(rule.jq, jq)
		}
		for _, m := range r.ManagedFieldsManagers {
			if rule.managers == nil {
				rule.managers = map[string]bool{}
			}
			rule.managers[m] = true
		}
		for j, p := range r.Paths {
			ptr, err := ParsePointer(p)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].paths[%d]: %w", i, j, err)
			}
			rule.pointers = append(rule.pointers, ptr)
		}
		if r.Target != nil {
			sel, err := compileSelector(r.Target)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].target.%w", i, err)
			}
			rule.target = sel
		}
		ig.rules = append(ig.rules, rule)
	}
	return ig, nil
}

func compileSelector(t *kustomizev1.Selector) (*selector, error) {
	s := &selector{group: t.Group, version: t.Version, kind: t.Kind, namespace: t.Namespace}
	if t.Name != "" {
		re, err := regexp.Compile("^(?:" + t.Name + ")$")
		if err != nil {
			return nil, fmt.Errorf("name: invalid regular expression %q: %v", t.Name, err)
		}
		s.name = re
	}
	if t.LabelSelector != "" {
		ls, err := labels.Parse(t.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %v", err)
		}
		s.labels = ls
	}
	if t.AnnotationSelector != "" {
		as, err := labels.Parse(t.AnnotationSelector)
		if err != nil {
			return nil, fmt.Errorf("annotationSelector: %v", err)
		}
		s.annotations = as
	}
	return s, nil
}

// matches reports whether obj is selected; empty fields match everything
// (so an empty group means any group, not only the core group).
func (s *selector) matches(obj *unstructured.Unstructured) bool {
	if s == nil {
		return true
	}
	gvk := obj.GroupVersionKind()
	switch {
	case s.group != "" && s.group != gvk.Group,
		s.version != "" && s.version != gvk.Version,
		s.kind != "" && s.kind != gvk.Kind,
		s.namespace != "" && s.namespace != obj.GetNamespace(),
		s.name != nil && !s.name.MatchString(obj.GetName()),
		s.labels != nil && !s.labels.Matches(labels.Set(obj.GetLabels())),
		s.annotations != nil && !s.annotations.Matches(labels.Set(obj.GetAnnotations())):
		return false
	}
	return true
}

// fieldsIn returns the fields that the rules selecting sel ignore, as
// pointers into doc (sel itself, or the other side of a comparison): each
// rule's JSON pointers as they are, the paths its jq expressions yield on
// doc, and the fields its managers own in live (nil: none) where doc has
// them. The pointers come deepest and last first, so that removing them
// one after the other never shifts a list element another one names.
func (ig *Ignorer) fieldsIn(sel, doc, live *unstructured.Unstructured) []Pointer {
	if ig == nil || sel == nil || doc == nil {
		return nil
	}
	var out []Pointer
	var jqDoc any // doc in gojq's types, made once when a rule needs it
	for _, r := range ig.rules {
		if !r.target.matches(sel) {
			continue
		}
		out = append(out, r.pointers...)
		if len(r.jq) > 0 && jqDoc == nil {
			jqDoc = jqValue(doc.Object)
		}
		for _, jq := range r.jq {
			// An expression that fails on this object (a type error, its
			// deadline) ignores nothing here.
			ps, _ := jq.pointers(jqDoc)
			out = append(out, ps...)
		}
		for _, path := range managedPaths(live, r.managers) {
			if p, ok := pointerIn(doc.Object, path); ok {
				out = append(out, p)
			}
		}
	}
	sortForRemoval(out)
	return out
}

// sortForRemoval orders pointers so that a list element's index never
// changes before it is used: descending, list indices compared as numbers.
func sortForRemoval(ps []Pointer) {
	sort.SliceStable(ps, func(i, j int) bool { return comparePointers(ps[i], ps[j]) > 0 })
}

func comparePointers(a, b Pointer) int {
	for k := 0; k < len(a) && k < len(b); k++ {
		if a[k] == b[k] {
			continue
		}
		ai, aerr := strconv.Atoi(a[k])
		bi, berr := strconv.Atoi(b[k])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a[k], b[k])
	}
	return len(a) - len(b)
}

// Apply removes, in place, the fields that the rules selecting obj name.
// sync-controller can use it to leave ignored fields out of what it applies.
func (ig *Ignorer) Apply(obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	for _, p := range ig.fieldsIn(obj, obj, nil) {
		p.Remove(obj.Object)
	}
}
