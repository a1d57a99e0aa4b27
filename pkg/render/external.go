package render

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

// The pieces below let another renderer (pkg/helmrender, which renders Helm
// charts) end in the same artifact as Build: the same node budget, the same
// post-rendering by kustomize, the same checks, canonical order and YAML
// form. They are Build's own steps, exported, so the two outputs cannot
// drift apart.

// Budget holds the node and document budgets of one render across every
// stream it parses, as sandboxFS holds them for a kustomize build.
type Budget struct {
	limits           Limits
	nodes, documents int64
}

// NewBudget starts the budgets of one render; zero limits take the
// defaults.
func NewBudget(limits Limits) *Budget { return &Budget{limits: limits.withDefaults()} }

// Parse decodes a multi-document YAML stream that a renderer produced into
// its objects, charging its YAML nodes (aliases counted expanded, before
// anything expands them) and documents to the budgets. Empty documents and
// documents of only comments are dropped; a document that is not a mapping
// is refused. source names the stream in messages.
func (b *Budget) Parse(source string, data []byte) ([]*kyaml.RNode, error) {
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	var out []*kyaml.RNode
	for i := 1; ; i++ {
		var doc kyaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, buildErr("%s: invalid YAML: %v", source, err)
		}
		n, err := expandedSize(&doc, b.limits.MaxNodes)
		if err != nil {
			return nil, limitErr("%s: %v", source, err)
		}
		b.nodes += n
		b.documents++
		if b.nodes > b.limits.MaxNodes {
			return nil, limitErr("%s: passes the limit of %d YAML nodes per render, aliases expanded (--max-yaml-nodes)", source, b.limits.MaxNodes)
		}
		if b.documents > b.limits.MaxDocuments {
			return nil, limitErr("%s: passes the limit of %d YAML documents per render (--max-yaml-documents)", source, b.limits.MaxDocuments)
		}
		root := &doc
		if root.Kind == kyaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == kyaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		if root.Kind != kyaml.MappingNode {
			return nil, validationErr("%s: a document is not an object", source)
		}
		out = append(out, kyaml.NewRNode(root))
	}
}

// PostRender applies kustomize patches (strategic merge or JSON 6902, with
// targets) and image overrides to objects, as a Kustomization's spec does:
// krusty runs on an in-memory filesystem holding only the objects and an
// overlay kustomization written from patches and images, with plugins
// disabled, so it reads nothing else and reaches no network. Objects with
// only a generateName keep it. ctx bounds the run as in Build.
func PostRender(ctx context.Context, objs []*kyaml.RNode, patches []kustomizev1.Patch, images []kustomizev1.Image) ([]*kyaml.RNode, error) {
	if len(patches) == 0 && len(images) == 0 {
		return objs, nil
	}
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		s, err := o.String()
		if err != nil {
			return nil, buildErr("%s: %v", describe(o), err)
		}
		buf.WriteString(s)
	}
	var next atomic.Int64
	fsys := filesys.MakeFsInMemory()
	const dir = "/post-render"
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, buildErr("post-render: %v", err)
	}
	if err := fsys.WriteFile(dir+"/objects.yaml", nameGenerated(buf.Bytes(), &next)); err != nil {
		return nil, buildErr("post-render: %v", err)
	}
	spec := &kustomizev1.KustomizationSpec{Patches: patches, Images: images}
	k, err := yaml.Marshal(overlayKustomization([]string{"objects.yaml"}, spec))
	if err != nil {
		return nil, buildErr("the post-renderer's patches or images do not make a kustomization: %v", err)
	}
	if err := fsys.WriteFile(dir+"/kustomization.yaml", k); err != nil {
		return nil, buildErr("post-render: %v", err)
	}
	resMap, err := runKustomize(ctx, fsys, dir, func(err error) error { return err })
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, buildErr("post-render: kustomize failed: %s", strings.ReplaceAll(err.Error(), dir+"/", ""))
	}
	return resMapNodes(resMap), nil
}

func resMapNodes(m resmap.ResMap) []*kyaml.RNode {
	out := make([]*kyaml.RNode, 0, m.Size())
	for _, res := range m.Resources() {
		out = append(out, &res.RNode)
	}
	return out
}

// Assemble is Build's final step for objects another renderer produced:
// each object must have apiVersion, kind and metadata.name (or, for a hook
// created afresh on every sync, only metadata.generateName); duplicates
// are refused naming both; objects are sorted into the canonical order and
// printed in the canonical YAML form (sorted keys, as kustomize prints
// them); the output is capped by limits.MaxOutputBytes. ctx is checked
// between objects.
func Assemble(ctx context.Context, objs []*kyaml.RNode, limits Limits) (*Result, error) {
	limits = limits.withDefaults()
	out := make([]rendered, 0, len(objs))
	for _, n := range objs {
		if ctx.Err() != nil {
			return nil, deadlineErr(ctx)
		}
		o, err := finishNode(n)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return assemble(out, limits)
}

// finishNode checks one object and prints it canonically.
func finishNode(n *kyaml.RNode) (rendered, error) {
	generateName, generated, err := restoreGenerateName(n)
	if err != nil {
		return rendered{}, buildErr("%s: %v", describe(n), err)
	}
	apiVersion, kind, name := n.GetApiVersion(), n.GetKind(), n.GetName()
	if generated {
		name = generateName
	} else if name == "" {
		if gen, _ := n.Pipe(kyaml.Lookup("metadata", "generateName")); gen != nil && kyaml.GetValue(gen) != "" {
			name, generated = kyaml.GetValue(gen), true
		}
	}
	if err := checkMeta(apiVersion, kind, name); err != nil {
		return rendered{}, validationErr("%v", err)
	}
	text, err := canonicalYAML(n)
	if err != nil {
		return rendered{}, buildErr("%s: %v", describe(n), err)
	}
	group, version := resid.ParseGroupVersion(apiVersion)
	return rendered{
		id:        object.ID{Group: group, Kind: kind, Namespace: n.GetNamespace(), Name: name},
		version:   version,
		yaml:      text,
		generated: generated,
	}, nil
}

// CanonicalYAML prints one object in the canonical YAML form of rendered
// manifests (through JSON, so keys come sorted, as `kustomize build` prints
// them).
func CanonicalYAML(n *kyaml.RNode) (string, error) { return canonicalYAML(n) }

// LimitError reports a passed limit as Build does: a *Error of reason
// LimitExceeded.
func LimitError(format string, args ...any) error { return limitErr(format, args...) }

// BuildError reports a broken input as Build does: a *Error of reason
// BuildFailed.
func BuildError(format string, args ...any) error { return buildErr(format, args...) }

// ValidationError reports a bad object as Build does: a *Error of reason
// ValidationFailed.
func ValidationError(format string, args ...any) error { return validationErr(format, args...) }

// DeadlineError reports a render stopped by its context as Build does.
func DeadlineError(ctx context.Context) error { return deadlineErr(ctx) }
