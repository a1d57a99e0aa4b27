//lint:file-ignore SA1019 the overlay's transformers are kustomize's builtin plugins, the very code krusty runs for the same fields (api/builtins is deprecated only for a kustomize API v1 that does not exist yet); TestFastPathEqualsKustomize fails if an upgrade changes what they do
package render

import (
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/filters/imagetag"
	nsfilter "sigs.k8s.io/kustomize/api/filters/namespace"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// The overlay's transformers on the fast path (docs/design/render-fast-path.md,
// "The overlay"): what krusty's overlay does to the objects its base gave,
// done with kustomize's own filters on the objects the fast path parsed,
// without krusty's resource map, whose id checks compare every object with
// every other.

// namespaceFieldSpecs are kustomize's default field specs for its
// namespace transformer (the "namespace" section of its default
// configuration, which krusty gives the transformer of an overlay with a
// namespace). kustomize keeps them in an internal package, so they are
// written here; TestNamespaceFieldSpecsAreKustomizes fails if a kustomize
// upgrade changes them. metadata.namespace is not among them: the filter
// sets it itself on every kind its schema says is namespaced.
var namespaceFieldSpecs = kustypes.FsSlice{
	{Gvk: resid.Gvk{Kind: "Namespace"}, Path: "metadata/name", CreateIfNotPresent: true},
	{Gvk: resid.Gvk{Group: "apiregistration.k8s.io", Kind: "APIService"}, Path: "spec/service/namespace", CreateIfNotPresent: true},
	{Gvk: resid.Gvk{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, Path: "spec/conversion/webhook/clientConfig/service/namespace"},
}

// setNamespace does what kustomize's NamespaceTransformer does to all
// (each of kind kinds[i]) for an overlay's namespace: it records each
// object's previous id (a build annotation krusty removes at the end, as
// the fast path does) and runs kustomize's namespace filter with the
// configuration krusty gives it — the default field specs, RoleBinding
// subjects named "default" — which sets metadata.namespace on a namespaced
// kind and renames a Namespace to the target. It returns false, for
// kustomize to run, on any error and on an id conflict the change makes
// (two objects that now have one id: kustomize refuses the build).
//
// kustomize checks the conflict after each object against all the others
// (a map lookup here): a conflict it finds part-way is also one between
// the final ids, since every namespaced object ends in the one namespace
// and every Namespace under the one name, and the other way round.
//
// The filter asks kustomize's process-wide schema whether a kind is
// cluster-scoped, which a concurrent build with an openapi field may have
// changed; the result is checked against the default schema's scope
// (fastKinds) and the fast path gives up where they differ.
//
// The previous ids are recorded only when storeIDs asks: krusty's prefix
// and suffix transformers read an object's original id, and nothing else
// the fast path runs after this reads them. Without a prefix or suffix,
// recording them writes three build annotations that the end of the fast
// path removes again (RemoveBuildAnnotations), and rewrites the other
// annotations as strings, which the end does too (SetOrigin and
// ClearTransformations rewrite them all): the output is the same without,
// and a build of a thousand objects spares three thousand annotation
// rewrites.
func setNamespace(all []*resource.Resource, kinds []fastKind, namespace string, storeIDs bool) bool {
	filter := nsfilter.Filter{Namespace: namespace, FsSlice: namespaceFieldSpecs, SetRoleBindingSubjects: nsfilter.DefaultSubjectsOnly}
	seen := make(map[idKey]bool, len(all))
	for i, r := range all {
		if r.IsNilOrEmpty() {
			return false
		}
		before := r.GetNamespace()
		if storeIDs {
			r.StorePreviousId()
		}
		if err := r.ApplyFilter(filter); err != nil || r.IsNilOrEmpty() {
			return false
		}
		want := namespace
		if kinds[i].clusterScoped {
			want = before
		}
		if r.GetNamespace() != want {
			return false
		}
		k := fastID(r, kinds[i])
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// fastOverlay is what the overlay's kustomization asks of the objects its
// base gave, each field done by the fast path with kustomize's own
// transformer for it, configured as krusty configures it: patches,
// targetNamespace, namePrefix, nameSuffix and images. commonMetadata and
// postBuild are not kustomize's: Build applies them after either path.
type fastOverlay struct {
	namespace, prefix, suffix string
	patches                   []kustypes.Patch
	images                    []kustypes.Image
}

// overlayOf returns what k, the overlay kustomization, asks of the fast
// path.
func overlayOf(k kustypes.Kustomization) *fastOverlay {
	return &fastOverlay{namespace: k.Namespace, prefix: k.NamePrefix, suffix: k.NameSuffix, patches: k.Patches, images: k.Images}
}

// isFile reports whether data, read as krusty reads a kustomization file
// (its Unmarshal and FixKustomization), is o's overlay: one resource, and
// no field but the ones o does. The overlay is generated from the spec
// as o is (overlayKustomization); reading it back makes sure that the
// fast path does what krusty would read, not what it meant to write.
func (o *fastOverlay) isFile(data []byte) bool {
	var k kustypes.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return false
	}
	k.FixKustomization()
	if len(k.Resources) != 1 {
		return false
	}
	want := listingKustomization(k.Resources)
	want.Namespace, want.NamePrefix, want.NameSuffix, want.Patches, want.Images = o.namespace, o.prefix, o.suffix, o.patches, o.images
	return reflect.DeepEqual(k, want)
}

// transform runs the overlay's transformers on all (each of kind
// kinds[i]) in the order krusty runs them (patches, namespace, prefix,
// suffix, images: configureBuiltinTransformers), and returns what is
// left of all (a strategic-merge patch may delete an object), or false
// for kustomize to run. krusty's name-reference step, which follows, has
// nothing to do when it takes the build (docs/design/render-fast-path.md,
// "Referrers"): no name changes but a Namespace's, which nothing refers
// to, and every name reference is a name the step leaves as it is
// (nameReferences); with a prefix or suffix, no object refers to another
// at all, so a new name has no reference to follow it.
func (o *fastOverlay) transform(all []*resource.Resource, kinds []fastKind) ([]*resource.Resource, bool) {
	// krusty sets kustomize's process-wide schema for the overlay, which
	// has no openapi field, before it builds: the patches' merge keys and
	// the namespace filter's scopes are the default schema's then.
	if openapi.SetSchema(nil, nil, true) != nil {
		return nil, false
	}
	var ok bool
	if len(o.patches) > 0 {
		if all, kinds, ok = patchAll(all, kinds, o.patches); !ok {
			return nil, false
		}
	}
	if o.namespace != "" && !setNamespace(all, kinds, o.namespace, o.prefix != "" || o.suffix != "") {
		return nil, false
	}
	if o.prefix != "" {
		var c struct {
			Prefix     string               `json:"prefix,omitempty" yaml:"prefix,omitempty"`
			FieldSpecs []kustypes.FieldSpec `json:"fieldSpecs,omitempty" yaml:"fieldSpecs,omitempty"`
		}
		c.Prefix, c.FieldSpecs = o.prefix, namePrefixFieldSpecs
		if !transformEach(builtins.NewPrefixTransformerPlugin(), c, all) {
			return nil, false
		}
	}
	if o.suffix != "" {
		var c struct {
			Suffix     string               `json:"suffix,omitempty" yaml:"suffix,omitempty"`
			FieldSpecs []kustypes.FieldSpec `json:"fieldSpecs,omitempty" yaml:"fieldSpecs,omitempty"`
		}
		c.Suffix, c.FieldSpecs = o.suffix, nameSuffixFieldSpecs
		if !transformEach(builtins.NewSuffixTransformerPlugin(), c, all) {
			return nil, false
		}
	}
	if len(o.images) > 0 && !setImages(all, o.images) {
		return nil, false
	}
	// A prefix or suffix renames every object but Namespaces alike, which
	// makes no two ids one; checked all the same, for kustomize to say
	// what it makes of two.
	seen := make(map[idKey]bool, len(all))
	renames := o.prefix != "" || o.suffix != ""
	for i, r := range all {
		k := fastID(r, kinds[i])
		if seen[k] {
			return nil, false
		}
		seen[k] = true
		// The name-reference step, on every object left, local
		// configuration included (krusty drops that after it).
		if refers, ok := nameReferences(r, kinds[i]); !ok || refers && renames {
			return nil, false
		}
	}
	return all, true
}

// namePrefixFieldSpecs, nameSuffixFieldSpecs and imageFieldSpecs are
// kustomize's default field specs for its prefix, suffix and image
// transformers, which krusty gives them (kept in an internal package of
// kustomize, so written here; TestOverlayFieldSpecsAreKustomizes fails if
// an upgrade changes them).
var (
	namePrefixFieldSpecs = kustypes.FsSlice{{Path: "metadata/name"}}
	nameSuffixFieldSpecs = kustypes.FsSlice{{Path: "metadata/name"}}
	imageFieldSpecs      = kustypes.FsSlice{
		{Path: "spec/containers[]/image", CreateIfNotPresent: true},
		{Path: "spec/initContainers[]/image", CreateIfNotPresent: true},
		{Path: "spec/volumes[]/image/reference", CreateIfNotPresent: true},
		{Path: "spec/template/spec/containers[]/image", CreateIfNotPresent: true},
		{Path: "spec/template/spec/initContainers[]/image", CreateIfNotPresent: true},
		{Path: "spec/template/spec/volumes[]/image/reference", CreateIfNotPresent: true},
		{Path: "spec/jobTemplate/spec/template/spec/volumes[]/image/reference", CreateIfNotPresent: true},
	}
)

// setImages does what kustomize's image transformer does for each of
// images, configured as krusty configures it, to each object of all, in
// krusty's order (every object for the first image, then for the next),
// and returns false on an error. The transformer runs two filters on
// every object of its map: its legacy filter, then its filter of the
// field specs. As they act on each object alone, setImages does each
// object alone: our own code (fastimages.go) where it can be sure of
// their outcome, the filters themselves where not (kustomizesImages).
func setImages(all []*resource.Resource, images []kustypes.Image) bool {
	tags := make([]kustypes.Image, len(images))
	own := true
	for i, img := range images {
		// The image as the plugin's Config reads it from krusty's YAML.
		p, ok := imagePlugin(img)
		if !ok {
			return false
		}
		tags[i] = p.(*builtins.ImageTagTransformerPlugin).ImageTag
		own = own && ownImageName(tags[i].Name)
	}
	for _, r := range all {
		if own {
			if meta, err := r.GetMeta(); err == nil {
				if sites, sure := imageSitesOf(r.YNode(), meta); sure {
					if !sites.empty() {
						for _, tag := range tags {
							sites.set(tag)
						}
					}
					ownImagesUses.Add(1)
					continue
				}
			}
		}
		if !kustomizesImages(r, tags) {
			return false
		}
	}
	return true
}

// kustomizesImages runs kustomize's two image filters with each of tags
// on r, and returns false on an error: setImages' way for an object our
// own code is not sure of. It does not run them on an object in which
// they can find nothing (imageless): for most objects of an application
// (ConfigMaps, Services, Secrets) they walk the whole object, twice, to
// change nothing. Of the field specs it gives the filter those whose path
// the object has up to its first list: the filter's walk of any other
// stops at a missing field without a word (imageless says why).
func kustomizesImages(r *resource.Resource, tags []kustypes.Image) bool {
	if imageless(r) {
		return true
	}
	walked := walkedImageFieldSpecs(r)
	for _, tag := range tags {
		if r.ApplyFilter(imagetag.LegacyFilter{ImageTag: tag}) != nil || r.IsNilOrEmpty() {
			return false
		}
		if r.ApplyFilter(imagetag.Filter{ImageTag: tag, FsSlice: walked}) != nil || r.IsNilOrEmpty() {
			return false
		}
	}
	return true
}

// walkedImageFieldSpecs are the field specs of imageFieldSpecs whose walk
// in r does not stop at a missing field before its first list, in their
// order; never nil.
func walkedImageFieldSpecs(r *resource.Resource) kustypes.FsSlice {
	walked := kustypes.FsSlice{}
	for i, walk := range imageWalks {
		if !missingOnTheWay(&r.RNode, walk) {
			walked = append(walked, imageFieldSpecs[i])
		}
	}
	return walked
}

// imagePlugin is kustomize's image transformer for img, configured as
// krusty configures it.
func imagePlugin(img kustypes.Image) (resmap.TransformerPlugin, bool) {
	var c struct {
		ImageTag   kustypes.Image
		FieldSpecs []kustypes.FieldSpec
	}
	c.ImageTag, c.FieldSpecs = img, imageFieldSpecs
	p := builtins.NewImageTagTransformerPlugin()
	return p, configure(p, c)
}

// imageless reports whether kustomize's image transformer (its legacy
// filter and its filter of imageFieldSpecs, imagetag.LegacyFilter and
// imagetag.Filter) leaves r as it is, without an error, whatever the
// image: the legacy filter reads r's metadata (refusing what GetMeta
// refuses) and then walks every mapping value of r looking for a
// "containers" or "initContainers" field, whose list it rewrites; the
// filter follows each field spec's path, by lookups that stop without a
// word at a missing field (no field is created: the transformer gives no
// kind to create) and refuse anything but a mapping on the way. So an
// object with neither field anywhere, each of whose field spec paths
// meets a missing field through mappings before its first list
// (missingOnTheWay), gives them nothing to do. Neither filter changes
// anything before it finds an image.
func imageless(r *resource.Resource) bool {
	if _, err := r.GetMeta(); err != nil {
		return false
	}
	if holdsContainers(r.YNode()) {
		return false
	}
	for _, walk := range imageWalks {
		if !missingOnTheWay(&r.RNode, walk) {
			return false
		}
	}
	return true
}

// holdsContainers reports whether any mapping in n has a key
// "containers" or "initContainers", the fields the image transformer's
// legacy filter looks for. It looks at more than the filter, which walks
// mapping values and list elements only (not keys, nor aliases): an
// object it reports is given to the transformer.
func holdsContainers(n *kyaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == kyaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			if v := n.Content[i].Value; v == "containers" || v == "initContainers" {
				return true
			}
		}
	}
	for _, c := range n.Content {
		if holdsContainers(c) {
			return true
		}
	}
	return false
}

// imageWalks are the paths of imageFieldSpecs up to their first list: a
// walk that stops at a missing field before it finds nothing of the rest.
var imageWalks = func() []string {
	walks := make([]string, len(imageFieldSpecs))
	for i, fs := range imageFieldSpecs {
		walk, _, _ := strings.Cut(fs.Path, "[]")
		walks[i] = walk
	}
	return walks
}()

// pluginHelpers are what krusty hands a builtin transformer's Config; of
// them the fast path's transformers use only the resource factory (an
// inline patch is parsed with it; a patch from a file, which would need
// the loader, is never asked of the fast path).
var pluginHelpers = resmap.NewPluginHelpers(nil, nil, resmap.NewFactory(resourceFactory), nil)

// configure configures kustomize's builtin transformer p as krusty does:
// c, the struct krusty fills for it, marshalled to YAML and handed to the
// plugin's Config.
func configure(p resmap.TransformerPlugin, c any) bool {
	y, err := yaml.Marshal(c)
	return err == nil && p.Config(pluginHelpers, y) == nil
}

// transformEach configures p with c and runs it on each object of all in
// a resource map of its own, as krusty runs it on the map of them all:
// the prefix, suffix and image transformers act on each object alone, and
// a map of one makes no id comparison with the others. An error, or an
// object gone or replaced, is false.
func transformEach(p resmap.TransformerPlugin, c any, all []*resource.Resource) bool {
	if !configure(p, c) {
		return false
	}
	for _, r := range all {
		left, ok := transformOne(p, r)
		if !ok || left == nil {
			return false
		}
	}
	return true
}

// transformOne runs t on r in a resource map of its own, dropping r when
// t empties it (as krusty's transformer chain drops empties), and returns
// what is left: r, or nil when it was deleted.
func transformOne(t resmap.Transformer, r *resource.Resource) (*resource.Resource, bool) {
	m := resmap.New()
	if err := m.Append(r); err != nil {
		return nil, false
	}
	if err := t.Transform(m); err != nil {
		return nil, false
	}
	m.DropEmpties()
	switch left := m.Resources(); {
	case len(left) == 0:
		return nil, true
	case len(left) == 1 && left[0] == r:
		return r, true
	default:
		return nil, false
	}
}

// patchAll runs the overlay's patches on all (each of kind kinds[i]) with
// kustomize's patch transformer, configured as krusty configures it for
// each entry, and returns what is left. A patch with a target selects
// each object on its own ids, labels and annotations (the resource map's
// Select), so it runs on each object alone. A strategic-merge patch
// without one applies to the one object whose id, current or previous,
// is the patch's (GetById), which is found the same way first; none or
// several is kustomize's error to give. A patch that renames an object,
// or changes its kind, namespace or version, makes it give up: ids are
// what the other transformers and the duplicate check go by. So does one
// that makes an object one the fast path does not take (an annotation of
// kustomize's); the name references a patch adds are checked with the
// others, after the overlay (transform).
func patchAll(all []*resource.Resource, kinds []fastKind, patches []kustypes.Patch) ([]*resource.Resource, []fastKind, bool) {
	for _, patch := range patches {
		if patch.Path != "" || patch.Options != nil {
			return nil, nil, false
		}
		var c struct {
			Path    string              `json:"path,omitempty"    yaml:"path,omitempty"`
			Patch   string              `json:"patch,omitempty"   yaml:"patch,omitempty"`
			Target  *kustypes.Selector  `json:"target,omitempty"  yaml:"target,omitempty"`
			Options *kustypes.PatchArgs `json:"options,omitempty" yaml:"options,omitempty"`
		}
		c.Patch, c.Target = patch.Patch, patch.Target
		p := builtins.NewPatchTransformerPlugin()
		if !configure(p, c) {
			return nil, nil, false
		}
		var (
			only   *resource.Resource
			target = p.(*builtins.PatchTransformerPlugin).Target
			sr     *kustypes.SelectorRegex
			// A JSON 6902 patch (which kustomize takes only with a
			// target) is done on each selected object as the plugin
			// does it, with less (patchJSON6902).
			ops, isJSON = json6902Of(patch.Patch)
		)
		if patch.Target == nil {
			var ok bool
			if only, ok = patchedByID(all, patch.Patch); !ok {
				return nil, nil, false
			}
		} else {
			var err error
			if target == nil {
				return nil, nil, false
			}
			if sr, err = kustypes.NewSelectorRegex(target); err != nil {
				return nil, nil, false
			}
		}
		var (
			left      = all[:0:0]
			leftKinds = kinds[:0:0]
		)
		for i, r := range all {
			picked := r == only
			if patch.Target != nil {
				var err error
				if picked, err = selects(sr, target, r); err != nil {
					return nil, nil, false
				}
			}
			if !picked {
				// The patch would select nothing in a map of r alone:
				// it leaves r as it is.
				left, leftKinds = append(left, r), append(leftKinds, kinds[i])
				continue
			}
			before := r.CurId()
			var ok bool
			if isJSON {
				ok = patchJSON6902(r, patch.Patch, ops)
			} else {
				r, ok = transformOne(p, r)
			}
			if !ok {
				return nil, nil, false
			}
			if r == nil {
				continue // deleted ($patch: delete)
			}
			if r.CurId() != before {
				return nil, nil, false
			}
			left, leftKinds = append(left, r), append(leftKinds, kinds[i])
		}
		all, kinds = left, leftKinds
	}
	for _, r := range all {
		if _, ok := fastPatched(r); !ok {
			return nil, nil, false
		}
	}
	return all, kinds, true
}

// selects reports whether kustomize's resource map, holding r, selects r
// for target (sr, its regular expressions): resWrangler.Select's test of
// each object — its namespace and name, original or current, its kind,
// its labels and annotations. A patch with a target acts only on what
// Select gives it, so an object it does not select is not given to the
// patch at all (a map of its own and the selector's regular expressions
// for each of a thousand objects, for nothing). An error is Select's
// (a label selector that does not parse).
func selects(sr *kustypes.SelectorRegex, target *kustypes.Selector, r *resource.Resource) (bool, error) {
	cur, org := r.CurId(), r.OrgId()
	if !sr.MatchNamespace(org.EffectiveNamespace()) && !sr.MatchNamespace(cur.EffectiveNamespace()) {
		return false, nil
	}
	if !sr.MatchName(org.Name) && !sr.MatchName(cur.Name) {
		return false, nil
	}
	if !sr.MatchGvk(r.GetGvk()) {
		return false, nil
	}
	if ok, err := r.MatchesLabelSelector(target.LabelSelector); err != nil || !ok {
		return false, err
	}
	return r.MatchesAnnotationSelector(target.AnnotationSelector)
}

// patchedByID returns the one object of all that a strategic-merge patch
// without a target applies to: the one whose id, current or previous,
// equals the patch's, as kustomize's GetById finds it. More than one
// document, or no object or several, is false: kustomize's to refuse.
func patchedByID(all []*resource.Resource, patch string) (*resource.Resource, bool) {
	docs, err := resourceFactory.SliceFromBytes([]byte(strings.TrimSpace(patch)))
	if err != nil || len(docs) != 1 {
		return nil, false
	}
	id := docs[0].OrgId()
	var found *resource.Resource
	for _, r := range all {
		m := resmap.New()
		if err := m.Append(r); err != nil {
			return nil, false
		}
		if len(m.GetMatchingResourcesByAnyId(id.Equals)) == 0 {
			continue
		}
		if found != nil {
			return nil, false
		}
		found = r
	}
	return found, found != nil
}
