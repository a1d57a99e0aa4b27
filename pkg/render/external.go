package render

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/yamlsize"
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
	p := parseStream(source, data, b.limits.MaxNodes)
	if err := b.charge(source, p); err != nil {
		return nil, err
	}
	return p.objs, nil
}

// ParseAll is Parse over many streams, parsed concurrently on every CPU;
// the budgets are charged in the order of the streams, so the error, if
// any, is the one a sequential Parse of each stream would return first.
// out[i] holds the objects of data[i].
func (b *Budget) ParseAll(sources []string, data [][]byte) ([][]*kyaml.RNode, error) {
	parsed := make([]parsedStream, len(data))
	parallel(len(data), func(i int) { parsed[i] = parseStream(sources[i], data[i], b.limits.MaxNodes) })
	out := make([][]*kyaml.RNode, len(data))
	for i := range parsed {
		if err := b.charge(sources[i], parsed[i]); err != nil {
			return nil, err
		}
		out[i] = parsed[i].objs
	}
	return out, nil
}

// Charge counts a YAML stream that is input, not objects (a post-render
// patch: a strategic-merge object or a JSON 6902 list), against the
// budgets copies times (the most objects it may be applied to), before
// anything that expands its aliases reads it. Nothing is kept.
func (b *Budget) Charge(source string, data []byte, copies int64) error {
	copies = max(copies, 1)
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc kyaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return buildErr("%s: invalid YAML: %v", source, err)
		}
		n, err := yamlsize.Expanded(&doc, b.limits.MaxNodes)
		if err != nil {
			return limitErr("%s: %v", source, err)
		}
		if err := b.charge(source, parsedStream{nodes: []int64{min(n*copies, b.limits.MaxNodes+1)}}); err != nil {
			return err
		}
	}
}

// ChargeObjects counts objects already in memory (a post-renderer's
// output) against the budgets, aliases counted expanded.
func (b *Budget) ChargeObjects(source string, objs []*kyaml.RNode) error {
	for _, o := range objs {
		n, err := yamlsize.Expanded(o.YNode(), b.limits.MaxNodes)
		if err != nil {
			return limitErr("%s: %s: %v", source, describe(o), err)
		}
		if err := b.charge(source, parsedStream{nodes: []int64{n}}); err != nil {
			return err
		}
	}
	return nil
}

// parsedStream is one stream parsed, not yet charged: its objects, the
// nodes of each document read before an error (one entry per document, so
// its length is the document count), and the error.
type parsedStream struct {
	objs  []*kyaml.RNode
	nodes []int64
	err   error
}

func parseStream(source string, data []byte, maxNodes int64) parsedStream {
	var p parsedStream
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc kyaml.Node
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				p.err = buildErr("%s: invalid YAML: %v", source, err)
			}
			return p
		}
		n, err := yamlsize.Expanded(&doc, maxNodes)
		if err != nil {
			p.err = limitErr("%s: %v", source, err)
			return p
		}
		p.nodes = append(p.nodes, n)
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
			p.err = validationErr("%s: a document is not an object", source)
			return p
		}
		p.objs = append(p.objs, kyaml.NewRNode(root))
	}
}

// charge adds a parsed stream's documents to the budgets in order and
// returns the first refusal, or the stream's own error.
func (b *Budget) charge(source string, p parsedStream) error {
	for _, n := range p.nodes {
		b.nodes += n
		b.documents++
		if b.nodes > b.limits.MaxNodes {
			return limitErr("%s: passes the limit of %d YAML nodes per render, aliases expanded (--max-yaml-nodes)", source, b.limits.MaxNodes)
		}
		if b.documents > b.limits.MaxDocuments {
			return limitErr("%s: passes the limit of %d YAML documents per render (--max-yaml-documents)", source, b.limits.MaxDocuments)
		}
	}
	return p.err
}

// parallel runs f(0) … f(n-1) on up to GOMAXPROCS goroutines and returns
// when all are done.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
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
	out := make([]rendered, len(objs))
	errs := make([]error, len(objs))
	// Each object is printed on its own, so on every CPU; the first error
	// in input order is reported, as a sequential loop would.
	parallel(len(objs), func(i int) {
		if ctx.Err() != nil {
			errs[i] = deadlineErr(ctx)
			return
		}
		out[i], errs[i] = finishNode(objs[i])
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
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
