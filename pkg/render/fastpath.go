package render

import (
	"bytes"
	"errors"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/filters/fieldspec"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// The fast path (docs/design/render-fast-path.md) builds a folder whose
// kustomization lists only files — the one generated for a folder without
// one, or the user's written so — for a spec with no field kustomize acts
// on, without krusty:
// kustomize's duplicate check appends every object to a map that compares
// it with every object before it, which is most of a 1,000-object build.
// It reads the same files through the same sandbox, takes each file's
// documents as generateKustomization parsed them (or parses them with
// kustomize's own resource factory), checks duplicates with a map keyed as
// kustomize compares ids, and cleans the objects with kustomize's own
// methods, so that what build gets is what krusty would have returned.
// Anything it is not sure of — an error, an object of a kind or with a
// field or annotation kustomize would act on — makes it give up, and the
// build runs kustomize as before, so that every refusal and message stays
// kustomize's.

// fastKinds are the kinds the fast path takes, each with the paths
// through which kustomize's name-reference step finds the names it refers
// to others by (its default configuration's fieldSpecs that select the
// kind), and its scope. That step runs on every build, prefix or not
// (docs/design/render-fast-path.md, "Referrers"): on a build that changes
// no name it refused, walking these paths with kustomize's fieldspec
// filter, only what nameReferences refuses, and rewrote nothing; with a
// prefix or suffix, an object with a name at one of them is left to
// kustomize. So a Pod template that names a ConfigMap is taken, and a
// RoleBinding, whose subjects the step completes with the namespace of
// the ServiceAccount it finds, is not.
// TestFastKindReferrerPathsAreKustomizes checks the paths and scopes
// against kustomize's own configuration. The scope is that of kustomize's
// default schema, which krusty sets for a build without an openapi field;
// it is written here so that the duplicate check does not read
// kustomize's process-wide schema, which another build may have changed.
var fastKinds = map[groupVersionKind]fastKind{
	{Version: "v1", Kind: "ConfigMap"}:                 {},
	{Version: "v1", Kind: "Secret"}:                    {},
	{Version: "v1", Kind: "Service"}:                   {},
	{Version: "v1", Kind: "ServiceAccount"}:            {referrerPaths: []string{"imagePullSecrets/name"}},
	{Version: "v1", Kind: "Namespace"}:                 {clusterScoped: true},
	{Version: "v1", Kind: "Pod"}:                       {referrerPaths: podSpecReferrerPaths("spec/", true)},
	{Version: "v1", Kind: "ReplicationController"}:     {referrerPaths: podSpecOwnReferrerPaths("spec/template/spec/")},
	{Group: "apps", Version: "v1", Kind: "Deployment"}: {referrerPaths: podSpecReferrerPaths("spec/template/spec/", true)},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:  {referrerPaths: podSpecReferrerPaths("spec/template/spec/", true)},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}: {referrerPaths: podSpecReferrerPaths("spec/template/spec/", false)},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}: {referrerPaths: append(podSpecReferrerPaths("spec/template/spec/", true),
		"spec/serviceName", "spec/volumeClaimTemplates/spec/storageClassName")},
	{Group: "batch", Version: "v1", Kind: "Job"}:     {referrerPaths: podSpecReferrerPaths("spec/template/spec/", true)},
	{Group: "batch", Version: "v1", Kind: "CronJob"}: {referrerPaths: podSpecReferrerPaths("spec/jobTemplate/spec/template/spec/", true)},
}

// podSpecReferrerPaths are the name-reference paths of kustomize's
// default configuration in a Pod spec at spec: the ConfigMaps and Secrets
// its volumes, env and envFrom name, its image pull Secrets, and — for
// every kind but ReplicaSet, which kustomize's configuration leaves out
// of those — its ServiceAccount, claims and PriorityClass (own).
func podSpecReferrerPaths(spec string, own bool) []string {
	var paths []string
	for _, p := range []string{
		"volumes/configMap/name",
		"containers/env/valueFrom/configMapKeyRef/name",
		"initContainers/env/valueFrom/configMapKeyRef/name",
		"containers/envFrom/configMapRef/name",
		"initContainers/envFrom/configMapRef/name",
		"volumes/projected/sources/configMap/name",
		"volumes/secret/secretName",
		"containers/env/valueFrom/secretKeyRef/name",
		"initContainers/env/valueFrom/secretKeyRef/name",
		"containers/envFrom/secretRef/name",
		"initContainers/envFrom/secretRef/name",
		"imagePullSecrets/name",
		"volumes/projected/sources/secret/name",
	} {
		paths = append(paths, spec+p)
	}
	if own {
		paths = append(paths, podSpecOwnReferrerPaths(spec)...)
	}
	return paths
}

// podSpecOwnReferrerPaths are the paths of a Pod spec at spec that name
// its ServiceAccount, claims and PriorityClass.
func podSpecOwnReferrerPaths(spec string) []string {
	return []string{spec + "serviceAccountName", spec + "volumes/persistentVolumeClaim/claimName", spec + "priorityClassName"}
}

type fastKind struct {
	referrerPaths []string
	clusterScoped bool
}

// groupVersionKind is a resid.Gvk without the scope resid adds from its
// schema, so that it can key a map written by hand.
type groupVersionKind struct{ Group, Version, Kind string }

// fastPathUses counts the builds the fast path produced; tests read it to
// prove they compared the fast path with kustomize, not kustomize twice.
// parsedReuses counts the files it took as generateKustomization parsed
// them (parsedResources), for the same reason; countedReuses the files
// generateKustomization took as the sandbox parsed them for its budgets
// (kioDocuments).
var fastPathUses, parsedReuses, countedReuses atomic.Int64

// disableFastPath, set by tests only, makes every build run kustomize.
var disableFastPath atomic.Bool

// resourceFactory is kustomize's resource factory, as krusty makes it.
var resourceFactory = provider.NewDefaultDepProvider().GetResourceFactory()

// fastPathSpec returns what spec asks of the overlay (fastoverlay.go), or
// false when it asks for something the fast path leaves to kustomize:
// components, and buildMetadata, which is kustomize's to write (the fast
// path does not know where kustomize would say an object came from).
func fastPathSpec(spec *kustomizev1.KustomizationSpec) (*fastOverlay, bool) {
	if len(spec.Components) > 0 || len(spec.BuildMetadata) > 0 {
		return nil, false
	}
	if commaInID(spec.TargetNamespace, spec.NamePrefix, spec.NameSuffix) {
		return nil, false
	}
	return overlayOf(overlayKustomization(nil, spec)), true
}

// commaInID reports whether any of the names or namespaces has a comma.
// kustomize keeps an object's earlier names and namespaces in build
// annotations as comma-joined lists (Resource.StorePreviousId) and splits
// them again when it reads them, so a comma in either makes the lists'
// lengths disagree and the build fail; the fast path leaves such builds
// to kustomize, for its refusal.
func commaInID(ids ...string) bool {
	for _, id := range ids {
		if strings.Contains(id, ",") {
			return true
		}
	}
	return false
}

// generatedList is what generateKustomization found in a folder without
// a kustomization file, when it lists only files: those files, and their
// documents as it parsed them.
type generatedList struct {
	files  []string
	parsed map[string]parsedFile
}

// fastPath returns what krusty returns for the overlay (path overlayFile)
// over spec.path's kustomization (path kustFile) in userDir, or ok false
// when it cannot be sure to. That kustomization is the one Build
// generated, when generated lists its files, or else the user's own,
// which it takes only when kustomize would read it as it reads a
// generated one: resources and nothing else (listedFiles). It reads the
// files as krusty does, through fsys and in the same order (the two
// kustomizations first), so the budgets, the deadline and the stand-in
// names of generateName objects come out the same; when it gives up, the
// caller rewinds fsys before running kustomize. A panic of kustomize's
// code on hostile input (its parse, its annotation clean-up) is giving up,
// as krusty's panics are a refusal (runKustomize). A file that
// generateKustomization parsed and that reads with the same bytes is not
// parsed again (parsedResources); a file read with others (a generateName
// object's stand-in name differs from read to read) is.
func fastPath(fsys *sandboxFS, userDir, overlayFile, kustFile string, generated *generatedList, overlay *fastOverlay) (out []*resource.Resource, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = nil, false
		}
	}()
	if disableFastPath.Load() {
		return nil, false
	}
	overlayData, err := fsys.ReadFile(overlayFile)
	if err != nil || !overlay.isFile(overlayData) {
		return nil, false
	}
	kustData, err := fsys.ReadFile(kustFile)
	if err != nil {
		return nil, false
	}
	var (
		files  []string
		parsed map[string]parsedFile
	)
	// kustomize loads each file relative to its kustomization's folder,
	// links resolved, and refuses one that ends up outside it.
	root, f, err := fsys.CleanedAbs(userDir)
	if err != nil || f != "" {
		return nil, false
	}
	if generated != nil {
		files, parsed = generated.files, generated.parsed
	} else if files, ok = listedFiles(fsys, root, userDir, kustFile, kustData); !ok {
		return nil, false
	}
	if len(files) == 0 {
		// kustomize refuses the empty kustomization itself.
		return nil, false
	}
	var (
		all   []*resource.Resource
		kinds []fastKind
		seen  = map[idKey]bool{}
	)
	for _, rel := range files {
		if strings.HasSuffix(rel, "/") || strings.Contains(rel, "..") {
			return nil, false
		}
		dir, name, err := fsys.CleanedAbs(filepath.Join(userDir, filepath.FromSlash(rel)))
		if err != nil || name == "" || !dir.HasPrefix(root) {
			return nil, false
		}
		file, data, err := readResourceFile(fsys, dir.Join(name), parsed, rel)
		if err != nil {
			return nil, false
		}
		ress, reused := parsedResources(file, data)
		if !reused {
			// Its documents are not kept beside the new parse.
			delete(parsed, rel)
			if ress, err = resourceFactory.SliceFromBytes(data); err != nil {
				return nil, false
			}
		}
		for _, r := range ress {
			kind, ok := fastResource(r)
			if !ok || commaInID(r.GetName(), r.GetNamespace()) {
				return nil, false
			}
			k := fastID(r, kind)
			if seen[k] {
				return nil, false // kustomize's error, in kustomize's words
			}
			seen[k] = true
			kinds = append(kinds, kind)
		}
		all = append(all, ress...)
	}
	// The overlay's transformers, as krusty runs them on everything the
	// base gave, local configuration included.
	if all, ok = overlay.transform(all, kinds); !ok {
		return nil, false
	}
	// As krusty does: local configuration dropped at the end, then the
	// build, origin and transformer annotations removed.
	nodes := make([]*kyaml.RNode, len(all))
	for i, r := range all {
		nodes[i] = &r.RNode
	}
	kept, err := resourceFactory.DropLocalNodes(nodes)
	if err != nil {
		return nil, false
	}
	for _, r := range kept {
		if !hasAnnotations(r) {
			// Each of the three reads the annotations and writes back
			// what is left, none: nothing to do but the lookups.
			continue
		}
		r.RemoveBuildAnnotations()
		if r.SetOrigin(nil) != nil || r.ClearTransformations() != nil {
			return nil, false
		}
	}
	fastPathUses.Add(1)
	return kept, true
}

// readResourceFile reads the resource file rel at path for the fast path,
// with its documents when they are parsed already: a generated
// kustomization's files were parsed by its checks (parsed); a file a
// kustomization lists is read as a manifest, whose first read counts the
// sandbox's budgets on a parse that is kustomize's where kioDocuments
// says so. Either way most files are parsed once, not twice.
func readResourceFile(fsys *sandboxFS, path string, parsed map[string]parsedFile, rel string) (parsedFile, []byte, error) {
	if file, ok := parsed[rel]; ok {
		data, err := fsys.ReadFile(path)
		return file, data, err
	}
	data, counted, err := fsys.readManifest(path)
	if err != nil {
		return parsedFile{}, nil, err
	}
	nodes, taken := kioDocuments(data, counted.docs)
	if !taken {
		return parsedFile{}, data, nil
	}
	return parsedFile{data: data, nodes: nodes, plain: counted.plain}, data, nil
}

// hasAnnotations reports whether r may have annotations: false when its
// metadata is a mapping without an annotations field, which kustomize's
// RemoveBuildAnnotations, SetOrigin (nil) and ClearTransformations leave
// as it is — each finds no annotation, and the last two write back none
// by clearing a field that is not there.
func hasAnnotations(r *resource.Resource) bool {
	meta := r.Field(kyaml.MetadataField)
	return meta == nil || meta.Value.YNode().Kind != kyaml.MappingNode || meta.Value.Field(kyaml.AnnotationsField) != nil
}

// idKey is an object's id as kustomize's ResId.Equals compares them:
// group, version, kind, name and the effective namespace.
type idKey struct {
	gvk             groupVersionKind
	name, namespace string
}

// fastID returns r's id as kustomize compares it: empty and "default" are
// one namespace, and a cluster-scoped kind has none.
func fastID(r *resource.Resource, kind fastKind) idKey {
	id := r.CurId()
	ns := id.Namespace
	switch {
	case kind.clusterScoped:
		ns = resid.TotallyNotANamespace
	case ns == "":
		ns = resid.DefaultNamespace
	}
	return idKey{groupVersionKind{id.Group, id.Version, id.Kind}, id.Name, ns}
}

// parsedResources returns the resources kustomize's SliceFromBytes makes
// of data, from the documents generateKustomization parsed of the same
// bytes with the same reader (readManifestDocuments), whose last step in
// kio.FromBytes, resolving anchors, is done here (when there are any); or false when data is not
// what was parsed, or when SliceFromBytes would do more than wrap each
// document: expand a FooList, refuse a document (its null-entry check, its
// metadata check), drop one (an empty or local-config document: the
// factory's wrappers of parsed documents, ResourcesFromRNodes and
// DropLocalNodes, drop local-config ones, which the duplicate check must
// see as kustomize does — the count tells). Resolving the anchors changes
// file's documents: on false they are not to be used again.
func parsedResources(file parsedFile, data []byte) ([]*resource.Resource, bool) {
	if file.nodes == nil || !bytes.Equal(file.data, data) {
		return nil, false
	}
	for _, n := range file.nodes {
		// DeAnchor copies every mapping twice over to merge it with
		// itself; on a plain file (no alias, anchor or "<<" key: the
		// sandbox's count saw every node) it would change nothing.
		if !file.plain {
			if err := n.DeAnchor(); err != nil {
				return nil, false
			}
		}
		if strings.HasSuffix(n.GetKind(), "List") {
			return nil, false
		}
		if nilEntry, _ := n.HasNilEntryInList(); nilEntry {
			return nil, false
		}
	}
	ress, err := resourceFactory.ResourcesFromRNodes(file.nodes)
	if err != nil || len(ress) != len(file.nodes) {
		return nil, false
	}
	parsedReuses.Add(1)
	return ress, true
}

// fastResource reports whether r is an object kustomize passes through
// unchanged but for the annotations krusty removes — a kind of fastKinds
// (whose name references the overlay checks, transform), and no
// annotation in kustomize's own
// domains (a build annotation would ask for a name hash, a previous name,
// a merge) but the local-config one — and returns its kind.
func fastResource(r *resource.Resource) (fastKind, bool) {
	return fastObject(r, false)
}

// fastPatched is fastResource for an object the overlay's patches went
// through: kustomize's JSON 6902 patch transformer records the object's
// id before patching it (StorePreviousId), as build annotations that
// krusty removes at the end. Those are taken when every id they record is
// the object's own, as they are when the patch changed none of it
// (patchAll gives up otherwise).
func fastPatched(r *resource.Resource) (fastKind, bool) {
	return fastObject(r, true)
}

func fastObject(r *resource.Resource, patched bool) (fastKind, bool) {
	gvk := r.GetGvk()
	kind, ok := fastKinds[groupVersionKind{gvk.Group, gvk.Version, gvk.Kind}]
	if !ok || !fastAnnotations(r, patched) {
		return kind, false
	}
	return kind, true
}

// errNotAName is nameReferences' refusal of a value the name-reference
// step would not just read as a name.
var errNotAName = errors.New("not a scalar name")

// nameReferences walks r's name-reference paths (kind.referrerPaths) as
// kustomize's name-reference step does — its fieldspec filter, with r's
// own kind — and reports whether one of them leads to a name (found). It
// returns false ok where the step could do more than read a name and
// leave it as it is (its nameref filter's set and seqFilter): the walk
// fails (a list of scalars where a path goes on, which kustomize refuses),
// or it ends on a mapping, or a list holding one, which the step
// completes with the name and namespace of the referral it finds, or on
// something else it refuses. A name, or a list of names, the step
// rewrites only to a referral's new name: a build that renames nothing
// leaves it as it is (docs/design/render-fast-path.md, "Referrers").
func nameReferences(r *resource.Resource, kind fastKind) (found, ok bool) {
	if len(kind.referrerPaths) == 0 {
		return false, true
	}
	gvk := r.GetGvk()
	// The step first checks that the object is the one it selected by id
	// (confirmNodeMatchesReferrer); a kind of fastKinds has one spelling.
	if r.GetApiVersion() != gvk.ApiVersion() {
		return false, false
	}
	leaf := func(n *kyaml.RNode) error {
		if kyaml.IsMissingOrNull(n) {
			return nil
		}
		switch n.YNode().Kind {
		case kyaml.ScalarNode:
			found = true
			return nil
		case kyaml.SequenceNode:
			for _, e := range n.Content() {
				switch {
				case kyaml.IsMissingOrNull(kyaml.NewRNode(e)):
				case e.Kind == kyaml.ScalarNode:
					found = true
				default:
					return errNotAName
				}
			}
			return nil
		}
		return errNotAName
	}
	for _, p := range kind.referrerPaths {
		if !fullWalk && missingOnTheWay(&r.RNode, p) {
			continue
		}
		f := fieldspec.Filter{FieldSpec: kustypes.FieldSpec{Gvk: gvk, Path: p}, SetValue: leaf}
		if err := r.PipeE(f); err != nil {
			return false, false
		}
	}
	return found, true
}

// missingOnTheWay reports whether path (fields separated by "/", none a
// list's "[]") leads through mappings of n to a field n lacks: the
// fieldspec filter's walk of it, which looks each field up in a mapping
// and stops without a word at a missing one, then finds nothing and
// calls nothing. Most of a workload's name-reference paths end so (no
// volumes, no init containers, no image pull Secrets), and the filter's
// walk of each costs more than the lookups. Any other node on the way (a
// list, whose elements the filter walks each, an alias, a null, a
// scalar it refuses) is false: the filter walks that path.
func missingOnTheWay(n *kyaml.RNode, path string) bool {
	node := n.YNode()
	for path != "" {
		if node.Kind != kyaml.MappingNode {
			return false
		}
		field, rest, _ := strings.Cut(path, "/")
		var next *kyaml.Node
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == field {
				next = node.Content[i+1]
				break
			}
		}
		if next == nil {
			return true
		}
		node, path = next, rest
	}
	return false
}

// fullWalk, set by tests only, makes nameReferences walk every path with
// the fieldspec filter, for the tests to hold missingOnTheWay to it.
var fullWalk bool

// fastAnnotations reports whether r's annotations leave kustomize nothing
// to do but remove its own. For an object the overlay's patches went
// through (patched), it takes the build annotations of r's previous ids
// when each is r's current id, and keys without a tag as kustomize's
// SetAnnotations writes them.
func fastAnnotations(r *resource.Resource, patched bool) bool {
	if patched {
		cur := r.CurId()
		for _, id := range r.PrevIds() {
			if id.Name != cur.Name || id.Kind != cur.Kind || id.EffectiveNamespace() != cur.EffectiveNamespace() {
				return false
			}
		}
	}
	meta, err := r.Pipe(kyaml.Lookup(kyaml.MetadataField))
	if err != nil || meta == nil || meta.YNode().Kind != kyaml.MappingNode {
		return false
	}
	ann := meta.Field(kyaml.AnnotationsField)
	if ann == nil {
		return true
	}
	// Annotations krusty rewrites (as strings) when it removes its own:
	// a mapping of scalars, not empty.
	if ann.Value.YNode().Kind != kyaml.MappingNode || len(ann.Value.YNode().Content) == 0 {
		return false
	}
	content := ann.Value.YNode().Content
	for i := 0; i+1 < len(content); i += 2 {
		k, v := content[i], content[i+1]
		// kustomize's SetAnnotations, which the JSON 6902 patch
		// transformer calls, writes keys without a tag.
		if k.Kind != kyaml.ScalarNode || v.Kind != kyaml.ScalarNode || k.Tag != kyaml.NodeTagString && (!patched || k.Tag != "") {
			return false
		}
		if k.Value == konfig.IgnoredByKustomizeAnnotation || patched && previousIDAnnotations[k.Value] {
			continue
		}
		for _, domain := range kustomizeDomains {
			if strings.Contains(k.Value, domain) {
				return false
			}
		}
	}
	return true
}

// previousIDAnnotations are the build annotations in which kustomize's
// StorePreviousId records an object's id (kustomize's names for them are
// internal).
var previousIDAnnotations = map[string]bool{
	konfig.ConfigAnnoDomain + "/previousKinds":      true,
	konfig.ConfigAnnoDomain + "/previousNames":      true,
	konfig.ConfigAnnoDomain + "/previousNamespaces": true,
}

// kustomizeDomains are the annotation domains kustomize reads or writes.
var kustomizeDomains = []string{"config.kubernetes.io/", "kustomize.config.k8s.io/", "kustomize.io/", "config.k8s.io/"}

// listedFiles returns the resources of the user's kustomization file
// (path kustFile, content data) in userDir (root, links resolved) when kustomize reads it as it
// reads a generated one: its own Unmarshal and FixKustomization (which
// moves a deprecated bases list into resources) leave a Kustomization of
// kustomize's version with resources and no other field, each a relative
// path and no URL; and no other kustomization file is beside it
// (kustomize refuses two). Whether each is a file inside the folder is
// for fastPath to find as it reads them. Anything else is false: the
// build is kustomize's.
func listedFiles(fsys *sandboxFS, root filesys.ConfirmedDir, userDir, kustFile string, data []byte) ([]string, bool) {
	// kustomize reads it as any file of the folder: a link out of it is
	// refused.
	if dir, name, err := fsys.CleanedAbs(kustFile); err != nil || name == "" || !dir.HasPrefix(root) {
		return nil, false
	}
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if p := filepath.Join(userDir, name); p != kustFile && fsys.Exists(p) {
			return nil, false
		}
	}
	resources, listing, err := readListing(data)
	if err != nil || !listing {
		return nil, false
	}
	for _, r := range resources {
		// A URL, a remote base (host:path) or an absolute path is not
		// a file of the folder; kustomize decides what those are.
		if r == "" || path.IsAbs(r) || filepath.IsAbs(r) || strings.ContainsAny(r, ":\\") {
			return nil, false
		}
	}
	return resources, true
}

// readListing reads a kustomization file as kustomize does (its Unmarshal
// and FixKustomization) and reports whether it only lists resources,
// which it returns: kustomize then gives those files' objects as they
// are. The fast path and the check of plugin folders (checkPluginFolder)
// ask the same question.
func readListing(data []byte) (resources []string, listing bool, err error) {
	var k kustypes.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, false, err
	}
	k.FixKustomization()
	return k.Resources, reflect.DeepEqual(k, listingKustomization(k.Resources)), nil
}
