package argocd

import "slices"

// IgnoresExtraneous reports whether CompareOptionsAnnotation lists
// IgnoreExtraneous. Only the tests call it; no controller reads the
// annotation yet.
func IgnoresExtraneous(ann map[string]string) bool {
	return slices.Contains(Items(ann[CompareOptionsAnnotation]), IgnoreExtraneous)
}
