package controller

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/compose"
)

// An ArtifactGenerator's spec.pathPattern and spec.commonMetadata: which
// ExternalArtifacts a generator makes, and what they carry besides their
// artifact (Flux 2.7's source-watcher semantics, docs/api/artifactgenerator.md).

// outputArtifact is one ExternalArtifact to build: an entry of
// spec.artifacts, with spec.pathPattern's captures put in.
type outputArtifact struct {
	sourceextv1beta1.OutputArtifact
	// labels are the captures of the matched folder (lowercased), nil
	// without spec.pathPattern.
	labels map[string]string
}

// pathPattern parses spec.pathPattern, and checks that every placeholder
// of spec.artifacts names one of its captures.
func pathPattern(obj *sourceextv1beta1.ArtifactGenerator) (*compose.Pattern, error) {
	_, rest, _ := splitRef(obj.Spec.PathPattern)
	p, err := compose.ParsePattern(rest)
	if err != nil {
		return nil, fmt.Errorf("spec.pathPattern: %w", err)
	}
	probe := map[string]string{}
	for _, n := range p.Names() {
		probe[n] = n
	}
	for _, a := range obj.Spec.OutputArtifacts {
		fields := []string{a.Name}
		for _, c := range a.Copy {
			fields = append(fields, c.From, c.To)
		}
		for _, f := range fields {
			if _, err := compose.Expand(f, probe); err != nil {
				return nil, fmt.Errorf("artifact %q: %w", a.Name, err)
			}
		}
	}
	return p, nil
}

// expandOutputs returns the artifacts to build: spec.artifacts as they
// are, or, with spec.pathPattern, each of them once per folder of the
// pattern source's tree (in trees) that matches, in lexical order of the
// folders. A capture is lowercased for the name and the labels and kept
// as found for the copy paths, as in Flux. It stalls with
// LimitExceeded past MaxGeneratedArtifacts, and with ValidationFailed for
// a captured segment that is not a label value, a name that is not an
// object name once filled in, or two folders giving the same name.
func expandOutputs(obj *sourceextv1beta1.ArtifactGenerator, trees map[string]string) ([]outputArtifact, error) {
	if obj.Spec.PathPattern == "" {
		out := make([]outputArtifact, len(obj.Spec.OutputArtifacts))
		for i, a := range obj.Spec.OutputArtifacts {
			out[i] = outputArtifact{OutputArtifact: a}
		}
		return out, nil
	}
	invalid := func(format string, a ...any) error {
		return plumbreconcile.Stalled(kustomizev1.ValidationFailedReason,
			fmt.Errorf("spec.pathPattern %q: "+format, append([]any{obj.Spec.PathPattern}, a...)...))
	}
	p, err := pathPattern(obj)
	if err != nil {
		return nil, plumbreconcile.Stalled(kustomizev1.ValidationFailedReason, err)
	}
	alias, _, _ := splitRef(obj.Spec.PathPattern)
	perMatch := len(obj.Spec.OutputArtifacts)
	matches, err := p.Match(trees[alias], sourceextv1beta1.MaxGeneratedArtifacts/perMatch)
	if errors.Is(err, compose.ErrTooManyMatches) {
		return nil, plumbreconcile.Stalled(meta.LimitExceededReason, fmt.Errorf(
			"spec.pathPattern %q matches more than %d folders: a generator makes at most %d artifacts (%d per folder here)",
			obj.Spec.PathPattern, sourceextv1beta1.MaxGeneratedArtifacts/perMatch, sourceextv1beta1.MaxGeneratedArtifacts, perMatch))
	}
	if err != nil {
		return nil, err
	}
	var out []outputArtifact
	seen := map[string]string{}
	for _, m := range matches {
		lower := make(map[string]string, len(m.Captures))
		for k, v := range m.Captures {
			if errs := validation.IsValidLabelValue(strings.ToLower(v)); len(errs) > 0 {
				return nil, invalid("folder %s: {%s} = %q is not a label value: %s", m.Path, k, v, strings.Join(errs, "; "))
			}
			lower[k] = strings.ToLower(v)
		}
		for _, a := range obj.Spec.OutputArtifacts {
			o := outputArtifact{OutputArtifact: *a.DeepCopy(), labels: lower}
			if o.Name, err = compose.Expand(a.Name, lower); err != nil {
				return nil, invalid("%v", err)
			}
			if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
				return nil, invalid("folder %s: artifact name %q is not an object name: %s", m.Path, o.Name, strings.Join(errs, "; "))
			}
			if prev, ok := seen[o.Name]; ok {
				return nil, invalid("folders %s and %s both give the artifact name %q", prev, m.Path, o.Name)
			}
			seen[o.Name] = m.Path
			for i, c := range a.Copy {
				if o.Copy[i].From, err = compose.Expand(c.From, m.Captures); err != nil {
					return nil, invalid("%v", err)
				}
				if o.Copy[i].To, err = compose.Expand(c.To, m.Captures); err != nil {
					return nil, invalid("%v", err)
				}
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// validateGeneratorMetadata checks spec.commonMetadata's keys and label
// values, which the API server would otherwise refuse only when an
// ExternalArtifact is written, one artifact into the publish.
func validateGeneratorMetadata(obj *sourceextv1beta1.ArtifactGenerator) error {
	cm := obj.Spec.CommonMetadata
	if cm == nil {
		return nil
	}
	for k, v := range cm.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			return fmt.Errorf("spec.commonMetadata.labels %q: %s", k, strings.Join(errs, "; "))
		}
	}
	for k := range cm.Annotations {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("spec.commonMetadata.annotations %q: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

// generatedMetadata returns the labels and annotations of a generated
// ExternalArtifact: the pathPattern captures, then spec.commonMetadata
// over them (Flux's order: common metadata overrides), then the
// generator's own label, which nothing overrides (pruning finds the
// generator's artifacts by it).
func generatedMetadata(obj *sourceextv1beta1.ArtifactGenerator, captures map[string]string) (labels, annotations map[string]string) {
	labels = maps.Clone(captures)
	if labels == nil {
		labels = map[string]string{}
	}
	if cm := obj.Spec.CommonMetadata; cm != nil {
		maps.Copy(labels, cm.Labels)
		annotations = maps.Clone(cm.Annotations)
	}
	labels[sourceextv1beta1.GeneratorLabel] = string(obj.UID)
	return labels, annotations
}
