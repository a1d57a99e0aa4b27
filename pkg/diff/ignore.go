package diff

import (
	"fmt"
	"regexp"

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
		if len(r.Paths) == 0 {
			return nil, fmt.Errorf("spec.ignore[%d].paths: at least one JSON pointer is required", i)
		}
		rule := ignoreRule{}
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

// Pointers returns the pointers of every rule whose target selects obj.
func (ig *Ignorer) Pointers(obj *unstructured.Unstructured) []Pointer {
	if ig == nil || obj == nil {
		return nil
	}
	var out []Pointer
	for _, r := range ig.rules {
		if r.target.matches(obj) {
			out = append(out, r.pointers...)
		}
	}
	return out
}

// Apply removes, in place, the fields that the rules selecting obj name.
// sync-controller can use it to leave ignored fields out of what it applies.
func (ig *Ignorer) Apply(obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	for _, p := range ig.Pointers(obj) {
		p.Remove(obj.Object)
	}
}
