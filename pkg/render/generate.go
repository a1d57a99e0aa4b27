package render

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

// kustomizationFile returns the path of the kustomization file in dir, or ""
// when there is none.
func kustomizationFile(fsys filesys.FileSystem, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if fsys.Exists(p) && !fsys.IsDir(p) {
			return p
		}
	}
	return ""
}

// manifestExts are the file extensions a generated kustomization includes.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// generateKustomization writes a kustomization.yaml into dir (which has
// none) listing, in lexical order, every YAML or JSON file below dir that
// holds Kubernetes objects, and every sub-folder with its own
// kustomization file (whose tree is then left to that kustomization).
// Files that do not parse are refused with their name; YAML files without
// any apiVersion or kind (a Helm values file, say) are skipped; documents
// that look like objects but miss apiVersion, kind or metadata.name are
// refused, and so are two documents naming the same object.
//
// A directory link is followed (inside the source only), but a folder
// reached a second time through links is refused: a link cycle or a fan
// of links to one folder would otherwise list its files again and again.
//
// It returns the file's content; the caller adds it to the build's
// filesystem as dir's kustomization.yaml (nothing is written to disk). It
// also says whether every resource listed is a file (no sub-folder with a
// kustomization of its own): the fast path (fastpath.go) takes only those,
// and, when keepParsed asks for them, each file's documents as parsed here
// (parsed) rather than parsing them again.
func generateKustomization(fsys *sandboxFS, dir string, keepParsed bool) (data []byte, resources []string, onlyFiles bool, parsed map[string]parsedFile, err error) {
	var (
		seen   = map[object.ID]string{}
		walked = map[string]string{}
	)
	onlyFiles = true
	if keepParsed {
		parsed = map[string]parsedFile{}
	}
	var walk func(d string) error
	walk = func(d string) error {
		rel := relSlash(dir, d)
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return err
		}
		if first, again := walked[real]; again {
			return buildErr("folder %s is reached again through a link, as %s: refusing link cycles and repeats", first, rel)
		}
		walked[real] = rel
		entries, err := fsys.listDir(d)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.name
			p := filepath.Join(d, name)
			rel := relSlash(dir, p)
			if e.dir {
				if strings.HasPrefix(name, ".") {
					continue
				}
				if kustomizationFile(fsys, p) != "" {
					resources = append(resources, rel)
					onlyFiles = false
					continue
				}
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			// The .jsonnet files of dir itself read as their objects
			// (evaluateJsonnet); those of sub-folders are not evaluated.
			if !manifestExts[strings.ToLower(path.Ext(name))] && (d != dir || !isJsonnetFile(name)) {
				continue
			}
			file, include, err := checkManifestFile(fsys, p, rel, seen)
			if err != nil {
				return err
			}
			if include {
				resources = append(resources, rel)
				if parsed != nil && onlyFiles {
					parsed[rel] = file
				}
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, nil, false, nil, err
	}
	data, err = yaml.Marshal(listingKustomization(resources))
	return data, resources, onlyFiles, parsed, err
}

// relSlash names p relative to dir with slashes ("." for dir itself).
func relSlash(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

func readDirSorted(fsys filesys.FileSystem, d string) ([]string, error) {
	names, err := fsys.ReadDir(d)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// parsedFile is a manifest file's bytes and its documents, parsed as
// kustomize parses a resource file (kio.FromBytes) but for the anchors,
// still to resolve: the check here reads each document as it is written,
// and only the fast path needs them resolved (parsedResources), unless
// plain says there is nothing to resolve.
type parsedFile struct {
	data  []byte
	nodes []*kyaml.RNode
	plain bool
}

// readManifestDocuments parses a manifest file's documents as the checks
// read them, and as kustomize's kio.FromBytes does but for resolving the
// anchors.
func readManifestDocuments(data []byte) ([]*kyaml.RNode, error) {
	return (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
}

// kioDocuments returns what readManifestDocuments returns for data, taken
// from docs, the documents the sandbox's budgets were counted on (a strict
// YAML parse of the same bytes), or false where it cannot be sure they
// are the same. kio's reader replaces CRLF line ends, splits the bytes at
// every line that starts with "---" and decodes the first document of each
// part with the same decoder as the strict parse; then it drops an empty
// document and unwraps a List. So for bytes without CRLF and without such
// a line, of one document, neither empty nor a List, and whose metadata
// kio reads, its result is that document, decoded from the same bytes by
// the same decoder: the one the budgets counted. Anything else (several
// documents in one file, say) is parsed again by the caller.
func kioDocuments(data []byte, docs []*kyaml.Node) ([]*kyaml.RNode, bool) {
	if len(docs) != 1 || bytes.Contains(data, []byte("\r\n")) || bytes.Contains(data, []byte("\n---")) {
		return nil, false
	}
	if doc := docs[0]; doc.Kind != kyaml.DocumentNode || len(doc.Content) != 1 || kyaml.IsYNodeEmptyDoc(doc) {
		return nil, false
	}
	n := kyaml.NewRNode(docs[0])
	meta, err := n.GetMeta()
	if err != nil && !errors.Is(err, kyaml.ErrMissingMetadata) {
		return nil, false
	}
	if meta.Kind == kio.ResourceListKind || meta.Kind == "List" {
		return nil, false
	}
	return []*kyaml.RNode{n}, true
}

// checkManifestFile parses one candidate file and says whether it holds
// objects to include. It takes the documents the sandbox parsed for its
// budgets where they are what kustomize's reader would give (kioDocuments),
// so that most files are parsed once.
func checkManifestFile(fsys *sandboxFS, p, rel string, seen map[object.ID]string) (parsedFile, bool, error) {
	data, counted, err := fsys.readManifest(p)
	if err != nil {
		return parsedFile{}, false, err
	}
	nodes, taken := kioDocuments(data, counted.docs)
	plain := taken && counted.plain
	if taken {
		countedReuses.Add(1)
	} else {
		if nodes, err = readManifestDocuments(data); err != nil {
			return parsedFile{}, false, buildErr("invalid YAML in %s: %v", rel, err)
		}
	}
	objects := 0
	for i, n := range nodes {
		meta, _ := n.GetMeta()
		if meta.APIVersion == "" && meta.Kind == "" {
			continue
		}
		objects++
		where := fmt.Sprintf("%s (document %d)", rel, i+1)
		if err := checkMeta(meta.APIVersion, meta.Kind, meta.Name); err != nil {
			return parsedFile{}, false, validationErr("%s: %v", where, err)
		}
		group, _ := resid.ParseGroupVersion(meta.APIVersion)
		key := clusterKey(object.ID{Group: group, Kind: meta.Kind, Namespace: meta.Namespace, Name: meta.Name})
		if first, dup := seen[key]; dup {
			return parsedFile{}, false, validationErr("duplicate object %s: defined in %s and in %s", keyText(key), first, where)
		}
		seen[key] = where
	}
	return parsedFile{data: data, nodes: nodes, plain: plain}, objects > 0, nil
}

// checkMeta reports the first missing identifying field of an object.
func checkMeta(apiVersion, kind, name string) error {
	switch {
	case apiVersion == "":
		return fmt.Errorf("%s %q has no apiVersion", orUnknown(kind), name)
	case kind == "":
		return fmt.Errorf("object %q (%s) has no kind", name, apiVersion)
	case name == "":
		return fmt.Errorf("%s %s has no metadata.name", apiVersion, kind)
	}
	return nil
}

func orUnknown(kind string) string {
	if kind == "" {
		return "object"
	}
	return kind
}

// overlayFile is the overlay kustomization (Build places it in a folder
// beside the source folder): it references userRel, the user's folder relative to
// the work folder (which by now has a kustomization file), and carries the
// spec's fields, so they apply on top of whatever the user's kustomization
// does, as Flux does. Components are relative to spec.path and may climb
// out of it but not out of the source; with spec.ignoreMissingComponents
// those exists (given the path relative to the work folder) denies are
// left out, as Flux removes them. commonMetadata is not here:
// kustomize's commonAnnotations also writes pod templates, and Flux's
// commonMetadata touches metadata only, so Build sets it itself.
// spec.buildMetadata is kustomize's own: the overlay is the kustomization
// built, so its buildMetadata covers every object.
func overlayFile(userRel string, spec *kustomizev1.KustomizationSpec, exists func(workRel string) bool) ([]byte, error) {
	var components []string
	for _, c := range spec.Components {
		// "../../components/x", as in Flux's docs, is fine; leaving the
		// source is not, whether or not it is missing.
		joined := path.Join(userRel, c)
		if path.IsAbs(c) || (joined != sourceFolder && !strings.HasPrefix(joined, sourceFolder+"/")) {
			return nil, buildErr("component %q leaves the source", c)
		}
		if spec.IgnoreMissingComponents && !exists(joined) {
			continue
		}
		components = append(components, "../"+joined)
	}
	k := overlayKustomization([]string{"../" + userRel}, spec)
	k.Components = components
	for _, m := range spec.BuildMetadata {
		k.BuildMetadata = append(k.BuildMetadata, string(m))
	}
	return yaml.Marshal(k)
}

// overlayKustomization is the kustomization of resources with the spec's
// targetNamespace, namePrefix, nameSuffix, patches and images (components
// are the caller's).
func overlayKustomization(resources []string, spec *kustomizev1.KustomizationSpec) kustypes.Kustomization {
	k := kustypes.Kustomization{
		TypeMeta:   kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources:  resources,
		Namespace:  spec.TargetNamespace,
		NamePrefix: spec.NamePrefix,
		NameSuffix: spec.NameSuffix,
	}
	for _, p := range spec.Patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &kustypes.Selector{
				ResId: resid.ResId{
					Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
					Name:      t.Name,
					Namespace: t.Namespace,
				},
				AnnotationSelector: t.AnnotationSelector,
				LabelSelector:      t.LabelSelector,
			}
		}
		k.Patches = append(k.Patches, kp)
	}
	for _, img := range spec.Images {
		k.Images = append(k.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	return k
}

// listingKustomization is the kustomization Build generates for a folder
// without one: resources and nothing else. The fast path takes a user's
// kustomization only when kustomize reads it as exactly this
// (listedFiles).
func listingKustomization(resources []string) kustypes.Kustomization {
	return kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: resources,
	}
}
