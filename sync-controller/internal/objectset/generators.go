package objectset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/pullrequest"
)

// MaxElements bounds the elements of one set, all generators together
// (and each matrix's product before it is kept).
const MaxElements = 1000

// maxClusterSecrets bounds the Secrets a clusters generator reads.
const maxClusterSecrets = 1000

// Element is the template's data for one element: JSON-like values
// (string, bool, int64, float64, []any, map[string]any).
type Element = map[string]any

// generators evaluates an ObjectSet's generators.
type generators struct {
	// Client reads GitRepositories (cached: they are watched).
	Client client.Reader
	// Reader reads the kubeconfig Secrets (uncached: only their metadata
	// is watched).
	Reader client.Reader
	// Fetch downloads artifacts (its MaxSize bounds them).
	Fetch fetch.Options
	// NoCrossNamespaceRefs refuses a sourceRef to another namespace.
	NoCrossNamespaceRefs bool
	// PullRequests lists the pull requests of a pullRequests generator.
	PullRequests *pullrequest.Client
}

// elements returns every generator's elements, in order, with the
// GitRepositories read (for the status message and the watch).
func (g *generators) elements(ctx context.Context, set *setv1.ObjectSet) ([]Element, error) {
	var all []Element
	for i, gen := range set.Spec.Generators {
		els, err := g.generator(ctx, set, gen)
		if err != nil {
			return nil, fmt.Errorf("spec.generators[%d]: %w", i, err)
		}
		all = append(all, els...)
		if len(all) > MaxElements {
			return nil, reconcile.Stalled(setv1.GeneratorFailedReason,
				fmt.Errorf("the generators give more than %d elements", MaxElements))
		}
	}
	return all, nil
}

func (g *generators) generator(ctx context.Context, set *setv1.ObjectSet, gen setv1.Generator) ([]Element, error) {
	switch {
	case gen.Matrix != nil:
		return g.matrix(ctx, set, gen.Matrix.Generators)
	case gen.Merge != nil:
		return g.merge(ctx, set, gen.Merge)
	}
	return g.child(ctx, set, setv1.ChildGenerator{List: gen.List, Git: gen.Git, Clusters: gen.Clusters, PullRequests: gen.PullRequests})
}

func (g *generators) child(ctx context.Context, set *setv1.ObjectSet, gen setv1.ChildGenerator) ([]Element, error) {
	switch {
	case gen.List != nil:
		return listElements(gen.List)
	case gen.Git != nil:
		return g.git(ctx, set, gen.Git)
	case gen.Clusters != nil:
		return g.clusters(ctx, set, gen.Clusters)
	case gen.PullRequests != nil:
		return g.pullRequests(ctx, set, gen.PullRequests)
	}
	// The CRD's rule admits no such generator; an object written before
	// the rule, or without the schema, still gets a clear error.
	return nil, reconcile.Stalled(setv1.GeneratorFailedReason, errors.New("no generator is set"))
}

// listElements decodes a list generator's elements: each must be a JSON
// object.
func listElements(l *setv1.ListGenerator) ([]Element, error) {
	out := make([]Element, 0, len(l.Elements))
	for i, raw := range l.Elements {
		var el Element
		if err := utiljson.Unmarshal(raw.Raw, &el); err != nil || el == nil {
			return nil, reconcile.Stalled(setv1.GeneratorFailedReason,
				fmt.Errorf("list.elements[%d] is no JSON object", i))
		}
		out = append(out, el)
	}
	return out, nil
}

// matrix is the cartesian product of two children: each pair's fields
// merged, the second's winning where both have one.
func (g *generators) matrix(ctx context.Context, set *setv1.ObjectSet, children []setv1.ChildGenerator) ([]Element, error) {
	if len(children) != 2 {
		return nil, reconcile.Stalled(setv1.GeneratorFailedReason, errors.New("matrix needs exactly two generators"))
	}
	a, err := g.child(ctx, set, children[0])
	if err != nil {
		return nil, fmt.Errorf("matrix.generators[0]: %w", err)
	}
	b, err := g.child(ctx, set, children[1])
	if err != nil {
		return nil, fmt.Errorf("matrix.generators[1]: %w", err)
	}
	if len(a)*len(b) > MaxElements {
		return nil, reconcile.Stalled(setv1.GeneratorFailedReason,
			fmt.Errorf("matrix of %d × %d elements is more than %d", len(a), len(b), MaxElements))
	}
	out := make([]Element, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, overlay(x, y))
		}
	}
	return out, nil
}

// merge keeps the first child's elements, each overlaid by the second's
// elements whose merge keys have equal values (Argo CD's merge
// generator); an element without every key is kept as it is.
func (g *generators) merge(ctx context.Context, set *setv1.ObjectSet, m *setv1.MergeGenerator) ([]Element, error) {
	if len(m.Generators) != 2 {
		return nil, reconcile.Stalled(setv1.GeneratorFailedReason, errors.New("merge needs exactly two generators"))
	}
	base, err := g.child(ctx, set, m.Generators[0])
	if err != nil {
		return nil, fmt.Errorf("merge.generators[0]: %w", err)
	}
	over, err := g.child(ctx, set, m.Generators[1])
	if err != nil {
		return nil, fmt.Errorf("merge.generators[1]: %w", err)
	}
	out := make([]Element, 0, len(base))
	for _, b := range base {
		merged := b
		for _, o := range over {
			if sameKeys(b, o, m.MergeKeys) {
				merged = overlay(merged, o)
			}
		}
		out = append(out, merged)
	}
	return out, nil
}

// sameKeys reports whether a and b have the same value for every key, a
// key being a top-level field or a dotted path (path.basename).
func sameKeys(a, b Element, keys []string) bool {
	for _, k := range keys {
		va, oka := lookup(a, k)
		vb, okb := lookup(b, k)
		if !oka || !okb || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

func lookup(el Element, key string) (any, bool) {
	var cur any = el
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// overlay returns a copy of a with b's fields laid over it: maps merge
// field by field, any other value of b replaces a's.
func overlay(a, b Element) Element {
	out := maps.Clone(a)
	if out == nil {
		out = Element{}
	}
	for k, v := range b {
		am, aok := out[k].(map[string]any)
		bm, bok := v.(map[string]any)
		if aok && bok {
			out[k] = overlay(am, bm)
			continue
		}
		out[k] = v
	}
	return out
}

// git reads the GitRepository's artifact and gives its matching folders
// or files. Stalled (InvalidSpec) for a GitRepository in another
// namespace under --no-cross-namespace-refs; a GitRepository missing or
// without an artifact yet is a failure retried (its artifact's arrival
// brings the set back through the watch).
func (g *generators) git(ctx context.Context, set *setv1.ObjectSet, gen *setv1.GitGenerator) ([]Element, error) {
	key := gitRepositoryKey(set, gen)
	if g.NoCrossNamespaceRefs && key.Namespace != set.Namespace {
		return nil, reconcile.Stalled(meta.InvalidSpecReason,
			fmt.Errorf("git.sourceRef names GitRepository %s in another namespace, and sync-controller runs with --no-cross-namespace-refs", key))
	}
	var repo sourcev1.GitRepository
	if err := g.Client.Get(ctx, key, &repo); err != nil {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("reading GitRepository %s: %w", key, err))
	}
	a := repo.Status.Artifact
	if a == nil {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("GitRepository %s has no artifact yet", key))
	}
	data, err := fetch.Bytes(ctx, a.URL, a.Digest, g.Fetch)
	if err != nil {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("GitRepository %s, revision %s: %w", key, a.Revision, err))
	}
	tree, err := readTree(bytes.NewReader(data))
	if err != nil {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("GitRepository %s, revision %s: %w", key, a.Revision, err))
	}
	var out []Element
	if len(gen.Directories) > 0 {
		dirs, err := tree.directories(gen.Directories)
		if err != nil {
			return nil, reconcile.Stalled(setv1.GeneratorFailedReason, fmt.Errorf("git.directories: %w", err))
		}
		out = append(out, dirs...)
	}
	if len(gen.Files) > 0 {
		files, err := tree.fileElements(gen.Files)
		if err != nil {
			return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("git.files, revision %s: %w", a.Revision, err))
		}
		out = append(out, files...)
	}
	if len(out) > MaxElements {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("git gives more than %d elements", MaxElements))
	}
	return out, nil
}

// gitRepositoryKey is the GitRepository a git generator names.
func gitRepositoryKey(set *setv1.ObjectSet, gen *setv1.GitGenerator) client.ObjectKey {
	ns := gen.SourceRef.Namespace
	if ns == "" {
		ns = set.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: gen.SourceRef.Name}
}

// clusters gives an element per kubeconfig Secret in the set's namespace
// that the selector matches (all with a kubeconfig when it is unset): the
// Secrets without one (neither value nor value.yaml, the keys
// spec.kubeConfig.secretRef reads) are skipped.
func (g *generators) clusters(ctx context.Context, set *setv1.ObjectSet, gen *setv1.ClustersGenerator) ([]Element, error) {
	sel := labels.Everything()
	if gen.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(gen.Selector)
		if err != nil {
			return nil, reconcile.Stalled(setv1.GeneratorFailedReason, fmt.Errorf("clusters.selector: %w", err))
		}
		sel = s
	}
	var list corev1.SecretList
	if err := g.Reader.List(ctx, &list, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.Limit(maxClusterSecrets+1)); err != nil {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("listing the cluster Secrets: %w", err))
	}
	if len(list.Items) > maxClusterSecrets || list.Continue != "" {
		return nil, reconcile.Failed(setv1.GeneratorFailedReason, fmt.Errorf("the clusters selector matches more than %d Secrets", maxClusterSecrets))
	}
	var out []Element
	for _, s := range list.Items {
		kc, ok := s.Data["value"]
		if !ok {
			if kc, ok = s.Data["value.yaml"]; !ok {
				continue
			}
		}
		el := Element{
			"name":   s.Name,
			"server": kubeconfigServer(kc),
			"metadata": map[string]any{
				"labels":      stringMap(s.Labels),
				"annotations": stringMap(s.Annotations),
			},
			"values": stringMap(gen.Values),
		}
		out = append(out, el)
	}
	return out, nil
}

// kubeconfigServer is the server of the kubeconfig's current context (or
// its only cluster), "" when it names none. It only reads the address:
// sync-controller's spec.kubeConfig rules judge the kubeconfig where it is
// used.
func kubeconfigServer(data []byte) string {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return ""
	}
	if c, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if cl, ok := cfg.Clusters[c.Cluster]; ok {
			return cl.Server
		}
	}
	if len(cfg.Clusters) == 1 {
		for _, cl := range cfg.Clusters {
			return cl.Server
		}
	}
	return ""
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
