package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"

	fluxfs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"plumb.dev/pkg/yamlsize"
)

// sandboxFS is the only filesystem kustomize sees during a build. It wraps
// Flux's secure on-disk filesystem (every path, links resolved, must stay
// below the build's folder) and adds what a build of hostile input needs:
//
//   - no writes at all;
//   - a deadline: every call fails once the build's context is done, so a
//     build that timed out stops at its next file access;
//   - a byte budget over every file read (Limits.MaxInputBytes), checked
//     against the file's size before it is read;
//   - a node and document budget over every YAML file read, counted on a
//     parse that keeps aliases as references (Limits.MaxNodes,
//     MaxDocuments): an alias bomb costs its expanded size here and is
//     refused before kustomize, which inflates every alias, reads it;
//   - the remote check (remote.go) on every kustomization and builtin
//     generator or transformer config, before kustomize acts on it.
//
// Files are read from disk when kustomize asks for them, so only what the
// build uses is ever in memory, and a directory link repeated a thousand
// times costs the bytes of what is read through it, never a copy.
type sandboxFS struct {
	disk   filesys.FileSystem
	ctx    context.Context
	root   string
	limits Limits

	mu        sync.Mutex
	readBytes int64
	nodes     int64
	documents int64
	// inspected holds the files already inspected and charged for their
	// YAML: a file read again (first while generating a kustomization,
	// then by kustomize) costs its bytes again but not its nodes.
	inspected map[string]bool
	// generated numbers the stand-in names of objects with only a
	// generateName (generatename.go).
	generated atomic.Int64
	// refused is the first refusal, reported instead of the error kustomize
	// wraps around it.
	refused error
	// resolved keeps what disk.CleanedAbs said of a path. kustomize
	// resolves a file's path and then reads it, and the read resolves it
	// again: each resolution checks every element of the path for a link
	// (an lstat each), a tenth of what a build of many small files adds
	// to kustomize's own work. The tree does not change while it is built
	// (Build never writes it), so the first answer stays true; refusals
	// are not kept.
	resolved map[string]resolvedPath
	// kept holds the bytes of the manifest files generateKustomization
	// read (readManifest), by real path: the fast path, or kustomize,
	// reads each of them again, and that read costs the file's bytes in
	// the budget again but no second open, stat and read of the disk
	// (the tree does not change while it is built).
	kept map[string][]byte

	// decryptor, when set, decrypts the SOPS-encrypted generator inputs
	// and patches noted in sources (decrypt.go), keyed by real path.
	decryptor Decryptor
	sources   map[string]source

	// virtual holds the files Build adds to the tree without writing them
	// (the overlay, a generated kustomization, the objects of a .jsonnet
	// file at the file's path), keyed by real path, and
	// virtualDirs the folders only they live in. The tree on disk is never
	// written, so one extracted source serves every build of its revision
	// at once.
	virtual     map[string][]byte
	virtualDirs map[string]bool
}

// addVirtual adds a file at the real path p (its folder resolved, links
// included), and its folder when that does not exist on disk. Build calls
// it before kustomize runs, never during.
func (s *sandboxFS) addVirtual(p string, data []byte) {
	if s.virtual == nil {
		s.virtual, s.virtualDirs = map[string][]byte{}, map[string]bool{}
	}
	s.virtual[p] = data
	if d := filepath.Dir(p); !s.disk.IsDir(d) {
		s.virtualDirs[d] = true
	}
}

// virtualFile returns the virtual file at path, if any. Only kustomization
// files and the objects of .jsonnet files (evaluateJsonnet) are ever
// virtual, so other names cost a map miss and nothing more; a path is
// looked up as given and with its folder's links resolved (kustomize names
// a folder by its real path, the caller may not).
func (s *sandboxFS) virtualFile(path string) (string, []byte, bool) {
	if len(s.virtual) == 0 || (!isKustomizationFile(path) && !isJsonnetFile(path)) {
		return "", nil, false
	}
	p := filepath.Clean(path)
	if data, ok := s.virtual[p]; ok {
		return p, data, true
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
		if data, ok := s.virtual[p]; ok {
			return p, data, true
		}
	}
	return "", nil, false
}

func (s *sandboxFS) isVirtualDir(path string) bool {
	return len(s.virtualDirs) > 0 && s.virtualDirs[filepath.Clean(path)]
}

func newSandboxFS(ctx context.Context, root string, limits Limits, decryptor Decryptor) (*sandboxFS, error) {
	disk, err := fluxfs.MakeFsOnDiskSecure(root)
	if err != nil {
		return nil, err
	}
	return &sandboxFS{disk: disk, ctx: ctx, root: root, limits: limits.withDefaults(), inspected: map[string]bool{},
		decryptor: decryptor, sources: map[string]source{}}, nil
}

// resolvedPath is disk.CleanedAbs's answer for a path.
type resolvedPath struct {
	dir  filesys.ConfirmedDir
	name string
}

// cleanedAbs is disk.CleanedAbs, each path resolved once (resolved).
func (s *sandboxFS) cleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	s.mu.Lock()
	r, ok := s.resolved[path]
	s.mu.Unlock()
	if ok {
		return r.dir, r.name, nil
	}
	dir, name, err := s.disk.CleanedAbs(path)
	if err != nil {
		return dir, name, err
	}
	s.mu.Lock()
	if s.resolved == nil {
		s.resolved = map[string]resolvedPath{}
	}
	s.resolved[path] = resolvedPath{dir, name}
	s.mu.Unlock()
	return dir, name, nil
}

var errReadOnly = errors.New("the source is read-only during rendering")

// alive fails once the build's context is done.
func (s *sandboxFS) alive() error {
	if err := s.ctx.Err(); err != nil {
		return s.refuse(deadlineErr(s.ctx))
	}
	return nil
}

// refuse records the first refusal and returns err.
func (s *sandboxFS) refuse(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = err
	}
	return err
}

// sandboxMark is what a build has used of its sandbox at one moment.
type sandboxMark struct {
	readBytes, nodes, documents, generated int64
	refused                                error
	inspected                              map[string]bool
}

// mark records the budgets used so far, for rewind.
func (s *sandboxFS) mark() sandboxMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	inspected := make(map[string]bool, len(s.inspected))
	for k, v := range s.inspected {
		inspected[k] = v
	}
	return sandboxMark{readBytes: s.readBytes, nodes: s.nodes, documents: s.documents,
		generated: s.generated.Load(), refused: s.refused, inspected: inspected}
}

// rewind forgets what was read since m: the fast path gives up this way
// before kustomize runs, so that kustomize meets the budgets, the
// refusals and the stand-in names as if it had run alone.
func (s *sandboxFS) rewind(m sandboxMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readBytes, s.nodes, s.documents, s.refused, s.inspected = m.readBytes, m.nodes, m.documents, m.refused, m.inspected
	s.generated.Store(m.generated)
}

// refusal returns the first refusal, if any.
func (s *sandboxFS) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *sandboxFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (s *sandboxFS) Mkdir(string) error                  { return errReadOnly }
func (s *sandboxFS) MkdirAll(string) error               { return errReadOnly }
func (s *sandboxFS) RemoveAll(string) error              { return errReadOnly }
func (s *sandboxFS) WriteFile(string, []byte) error      { return errReadOnly }

// Open is refused: kustomize reads builds through ReadFile, and a handle
// would bypass the budgets.
func (s *sandboxFS) Open(path string) (filesys.File, error) {
	return nil, fmt.Errorf("open %s: not available while rendering", s.rel(path))
}

func (s *sandboxFS) IsDir(path string) bool {
	return s.alive() == nil && (s.isVirtualDir(path) || s.disk.IsDir(path))
}

func (s *sandboxFS) Exists(path string) bool {
	if s.alive() != nil {
		return false
	}
	if _, _, ok := s.virtualFile(path); ok || s.isVirtualDir(path) {
		return true
	}
	return s.disk.Exists(path)
}

// ReadDir lists a folder with the virtual files in it.
func (s *sandboxFS) ReadDir(path string) ([]string, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	var names []string
	if !s.isVirtualDir(path) {
		var err error
		if names, err = s.disk.ReadDir(path); err != nil {
			return nil, err
		}
	}
	dir := filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for p := range s.virtual {
		if filepath.Dir(p) == dir && !slices.Contains(names, filepath.Base(p)) {
			names = append(names, filepath.Base(p))
		}
	}
	sort.Strings(names)
	return names, nil
}

// dirEntry is an entry of a folder, and whether IsDir says it is one.
type dirEntry struct {
	name string
	dir  bool
}

// listDir lists a folder as ReadDir does, sorted, and says of each entry
// whether it is a folder as IsDir says. IsDir resolves every element of
// the path for links (an lstat each) and stats the result twice, which
// for a folder of a thousand manifests was a tenth of a build; here a
// regular file — one the folder's own listing says is neither a link nor
// anything else — is taken as no folder without asking: IsDir says false
// of every regular file. Folders, links and everything else are asked of
// IsDir, and so is every entry of a folder the listing cannot be had for
// as the sandbox reads it (outside the source, virtual). A regular file's
// resolution is kept too (resolved), for the same reason: it is the
// folder's, and its name.
func (s *sandboxFS) listDir(path string) ([]dirEntry, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	var regular map[string]bool
	if dir, name, err := s.cleanedAbs(path); err == nil && name == "" && !s.isVirtualDir(path) {
		if entries, err := os.ReadDir(dir.String()); err == nil {
			regular = make(map[string]bool, len(entries))
			s.mu.Lock()
			if s.resolved == nil {
				s.resolved = map[string]resolvedPath{}
			}
			for _, e := range entries {
				if regular[e.Name()] = e.Type().IsRegular(); regular[e.Name()] {
					// A regular file, no link, in a folder that resolves
					// to dir: disk.CleanedAbs would resolve it to dir and
					// its name, inside the source as dir is, with a link
					// resolution of every element of its path.
					s.resolved[filepath.Join(path, e.Name())] = resolvedPath{dir, e.Name()}
				}
			}
			s.mu.Unlock()
		}
	}
	names, err := s.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, len(names))
	for i, n := range names {
		out[i].name = n
		if !regular[n] {
			out[i].dir = s.IsDir(filepath.Join(path, n))
		}
	}
	return out, nil
}

func (s *sandboxFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if err := s.alive(); err != nil {
		return "", "", err
	}
	if p, _, ok := s.virtualFile(path); ok {
		return filesys.ConfirmedDir(filepath.Dir(p)), filepath.Base(p), nil
	}
	if s.isVirtualDir(path) {
		return filesys.ConfirmedDir(filepath.Clean(path)), "", nil
	}
	dir, name, err := s.cleanedAbs(path)
	if err == nil && name != "" && isKustomizationFile(path) {
		// kustomize reads a file at the path resolved here, so a
		// kustomization reached through a link of another name would be
		// read as a plain file and escape the kustomization check; and it
		// joins the paths a kustomization lists to the folder it found
		// the file in, so one linked from another folder would be checked
		// against the wrong folder's files.
		folder, _, ferr := s.disk.CleanedAbs(filepath.Dir(path))
		if !isKustomizationFile(name) || (ferr == nil && folder != dir) {
			return "", "", s.refuse(buildErr("%s: a link to %s; a kustomization file must not link to a file of another name or folder",
				s.rel(path), s.rel(dir.Join(name))))
		}
	}
	return dir, name, err
}

func (s *sandboxFS) Glob(pattern string) ([]string, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	return s.disk.Glob(pattern)
}

func (s *sandboxFS) Walk(path string, fn filepath.WalkFunc) error {
	if err := s.alive(); err != nil {
		return err
	}
	return s.disk.Walk(path, func(p string, info os.FileInfo, err error) error {
		if aerr := s.alive(); aerr != nil {
			return aerr
		}
		return fn(p, info, err)
	})
}

// ReadFile reads a file within the byte budget, charges its YAML to the
// node and document budgets and runs the remote check on it.
func (s *sandboxFS) ReadFile(path string) ([]byte, error) {
	data, _, err := s.read(path, false)
	return data, err
}

// readManifest is ReadFile for a manifest file that generateKustomization
// checks and that the fast path or kustomize reads again: its bytes are
// kept for that read (kept), and it also returns the documents the
// budgets were counted on, when this read counted them (the file's first)
// and the bytes returned are the ones counted (no stand-in name written
// into them, nameGenerated); otherwise no documents. The caller may then
// take those documents instead of parsing the bytes again (kioDocuments).
// The bytes of a file's first read are the kept ones: the caller (not
// kustomize, which gets copies) must not write to them.
func (s *sandboxFS) readManifest(path string) ([]byte, yamlDocs, error) {
	return s.read(path, true)
}

func (s *sandboxFS) read(path string, manifest bool) ([]byte, yamlDocs, error) {
	if err := s.alive(); err != nil {
		return nil, yamlDocs{}, err
	}
	rel := s.rel(path)
	real, data, err := s.readBounded(path, rel, manifest)
	if err != nil {
		return nil, yamlDocs{}, err
	}
	if s.decryptor != nil {
		if isKustomizationFile(path) {
			s.noteSources(path, data)
		} else if data, err = s.decryptSource(real, rel, data); err != nil {
			return nil, yamlDocs{}, err
		}
	}
	// A file is inspected once as what it is read as: the same file read
	// as data and then through a link named kustomization.yaml is checked
	// as a kustomization the second time.
	kustomization := isKustomizationFile(path)
	key := real
	if kustomization {
		key += "\x00kustomization"
	}
	var docs yamlDocs
	if s.firstRead(key) {
		if docs, err = s.inspect(rel, filepath.Dir(path), data, kustomization); err != nil {
			return nil, yamlDocs{}, s.refuse(err)
		}
	}
	if kustomization {
		// kustomize reads exactly the bytes that were checked: a rewrite
		// (nameGenerated re-encodes documents) could change what its
		// decoder sees.
		return data, yamlDocs{}, nil
	}
	named := nameGenerated(data, &s.generated)
	if len(named) != len(data) || len(data) > 0 && &named[0] != &data[0] {
		docs = yamlDocs{} // counted on other bytes than those returned
	}
	return named, docs, nil
}

// readBounded reads the file at path (a virtual one, or from disk inside
// the source) within the byte budget and returns its real path. A file
// read before with keep is not read from disk again (kept); one read with
// keep is kept.
func (s *sandboxFS) readBounded(path, rel string, keep bool) (string, []byte, error) {
	if real, data, ok := s.virtualFile(path); ok {
		return real, data, s.chargeBytes(rel, int64(len(data)))
	}
	dir, name, err := s.cleanedAbs(path)
	if err != nil {
		var outside *fluxfs.ConstraintError
		if errors.As(err, &outside) {
			return "", nil, buildErr("%s: it or a link on its way leads outside the source", rel)
		}
		return "", nil, err
	}
	real := dir.Join(name)
	s.mu.Lock()
	kept, ok := s.kept[real]
	s.mu.Unlock()
	if ok {
		// A copy: what kustomize does with the bytes it is given is its
		// own business, and the next read must get the file as it is.
		return real, bytes.Clone(kept), s.chargeBytes(rel, int64(len(kept)))
	}
	// O_NONBLOCK: a FIFO opens at once (and is refused below as not a
	// regular file) instead of blocking the build until a writer comes;
	// on a regular file it changes nothing, and it spares os.OpenFile
	// its switch of the descriptor to non-blocking mode and back.
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if err := s.chargeBytes(rel, fi.Size()); err != nil {
		return "", nil, err
	}
	// A file that grew since Stat is read no further than its budget;
	// one that shrank, to its end.
	data := make([]byte, fi.Size())
	n, err := io.ReadFull(f, data)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", nil, err
	}
	data = data[:n]
	if keep {
		s.mu.Lock()
		if s.kept == nil {
			s.kept = map[string][]byte{}
		}
		s.kept[real] = data
		s.mu.Unlock()
	}
	return real, data, nil
}

// firstRead reports whether the file at key (its real path, marked when it
// is read as a kustomization) is read for the first time.
func (s *sandboxFS) firstRead(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inspected[key] {
		return false
	}
	s.inspected[key] = true
	return true
}

func (s *sandboxFS) chargeBytes(rel string, n int64) error {
	s.mu.Lock()
	s.readBytes += n
	total := s.readBytes
	s.mu.Unlock()
	if total > s.limits.MaxInputBytes {
		return s.refuse(limitErr("reading %s passes the limit of %d bytes read per render (--max-render-input)",
			rel, s.limits.MaxInputBytes))
	}
	return nil
}

// inspect charges data's YAML documents and nodes (aliases expanded) to the
// budgets and runs the remote check (remote.go): the kustomization check
// on a kustomization file, the plugin-config check on every builtin
// generator or transformer config among data's objects. Data that is not
// YAML (a file for a ConfigMap, say) costs only its bytes; a kustomization
// file that is not YAML, or that kustomize cannot read, is refused here,
// before kustomize acts on any of it. It returns the documents of a YAML
// file that is not a kustomization, as the budgets counted them.
func (s *sandboxFS) inspect(rel, dir string, data []byte, kustomization bool) (yamlDocs, error) {
	docs, err := s.parse(rel, data)
	if err != nil {
		return yamlDocs{}, err
	}
	if docs.docs == nil && len(bytes.TrimSpace(data)) > 0 {
		if kustomization {
			return yamlDocs{}, buildErr("%s: not a YAML file", rel)
		}
		// Not YAML to a strict parser; if kustomize's reader (which splits
		// documents its own way) makes objects of it, its documents were
		// neither counted nor checked: refuse it rather than let it by.
		if nodes, err := resourceFactory.RNodesFromBytes(data); err == nil && len(nodes) > 0 {
			return yamlDocs{}, buildErr("%s: YAML that kustomize reads differently from a strict YAML parser", rel)
		}
		return yamlDocs{}, nil
	}
	if kustomization {
		return yamlDocs{}, s.inspectKustomization(rel, dir, data)
	}
	if !docs.builtinConfig {
		return docs, nil // no object can be a builtin config: nothing to decode again
	}
	// The objects as kustomize makes them of the file (its documents split
	// its way, anchors and merge keys resolved, Lists unwrapped): the
	// kind and apiVersion it decides a plugin by are these.
	nodes, err := resourceFactory.RNodesFromBytes(data)
	if err != nil {
		return docs, nil // kustomize cannot read the file as objects either
	}
	for _, n := range nodes {
		if n.GetApiVersion() != konfig.BuiltinPluginApiVersion {
			continue // not builtin: with plugins disabled, kustomize refuses it as a plugin
		}
		text, err := n.MarshalJSON()
		if err != nil {
			return yamlDocs{}, buildErr("%s: %v", rel, err)
		}
		if err := checkPluginConfig(rel, n.GetKind(), text); err != nil {
			return yamlDocs{}, err
		}
	}
	return docs, nil
}

// inspectKustomization reads data, the kustomization file in dir, with
// kustomize's own decoder, checks it, inspects the YAML written inline in
// it like a file of its own, since kustomize parses that too (plugin
// configs under generators, transformers and validators, and inline
// patches), and checks the folders listed there (checkPluginFolder).
func (s *sandboxFS) inspectKustomization(rel, dir string, data []byte) error {
	var k kustypes.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return buildErr("%s: %v", rel, err)
	}
	if err := checkKustomization(rel, &k); err != nil {
		return err
	}
	for _, text := range inlineTexts(&k) {
		if _, err := s.inspect(rel+" (inline)", "", []byte(text), false); err != nil {
			return err
		}
	}
	for _, l := range pluginLists(&k) {
		for _, e := range l.entries {
			if err := s.checkPluginFolder(rel, dir, l.field, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPluginFolder refuses a folder listed under generators, transformers
// or validators whose kustomization does more than list files. kustomize
// takes such a folder's built output for plugin configs, so its patches,
// replacements or transformers could write a builtin config's path after
// every file was checked; a folder that only lists files gives kustomize
// those files' objects as they are, and each was checked as it was read.
func (s *sandboxFS) checkPluginFolder(rel, dir, field, entry string) error {
	// The entry as kustomize joins it, verbatim (spaces and newlines are
	// part of a folder's name); inline YAML names no folder.
	if dir == "" || entry == "" || filepath.IsAbs(entry) {
		return nil
	}
	folder := filepath.Join(dir, entry)
	if !s.IsDir(folder) {
		return nil
	}
	refuse := func(why string) error {
		return buildErr("%s: %s %q is a folder whose kustomization %s; kustomize would take what it builds for plugin configs, "+
			"which the remote check cannot read before kustomize acts on them: list the config files instead", rel, field, entry, why)
	}
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(folder, name)
		if !s.Exists(p) {
			continue
		}
		data, err := s.ReadFile(p) // checked as a kustomization as it is read
		if err != nil {
			return err
		}
		resources, listing, err := readListing(data)
		if err != nil {
			return buildErr("%s: %v", s.rel(p), err)
		}
		if !listing {
			return refuse("does more than list files")
		}
		for _, r := range resources {
			if s.disk.IsDir(filepath.Join(folder, r)) {
				return refuse("lists a folder")
			}
		}
		return nil
	}
	return nil // kustomize refuses a folder without a kustomization
}

// yamlDocs are a file's YAML documents as the budgets counted them
// (parse), aliases kept as references, and what the count found in them.
type yamlDocs struct {
	docs []*kyaml.Node
	// plain: no node of any document is an alias or has an anchor, and
	// no mapping has a "<<" key, so kustomize's DeAnchor, which resolves
	// aliases, clears anchors and merges or removes "<<" keys, would
	// leave every document as it is (parsedResources).
	plain bool
	// builtinConfig: a scalar of some document is kustomize's builtin
	// plugin apiVersion, so an object may be a builtin config (inspect).
	builtinConfig bool
}

// parse decodes data into its YAML documents, aliases kept as references,
// and charges them to the budgets. It returns no documents for data that
// is not YAML.
func (s *sandboxFS) parse(rel string, data []byte) (yamlDocs, error) {
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	out := yamlDocs{plain: true}
	for {
		doc := new(kyaml.Node)
		if err := dec.Decode(doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return yamlDocs{}, nil
		}
		n, shape, err := measure(doc, s.limits.MaxNodes)
		if err != nil {
			return yamlDocs{}, limitErr("%s: %v", rel, err)
		}
		if err := s.chargeYAML(rel, n); err != nil {
			return yamlDocs{}, err
		}
		out.docs = append(out.docs, doc)
		out.plain = out.plain && !shape.aliased && !shape.mergeKey
		out.builtinConfig = out.builtinConfig || shape.builtinConfig
	}
}

// docShape is what measure finds in a document besides its size.
type docShape struct {
	aliased       bool // an alias, or an anchor
	mergeKey      bool // a mapping key "<<", merge-tagged or not
	builtinConfig bool // a scalar that is kustomize's builtin plugin apiVersion
}

// measure returns yamlsize.Expanded's count of doc's nodes, or its error,
// and doc's shape, in one walk of the tree: without an alias, a tree
// within MaxDepth and max has as many nodes expanded as it has, and
// Expanded is asked only for the others (to count the aliases, or to
// refuse the tree in its own words). Aliases are not followed: the shape
// is that of the tree as written.
func measure(doc *kyaml.Node, max int64) (int64, docShape, error) {
	var (
		shape  docShape
		count  int64
		beyond bool // deeper than MaxDepth, or more than max nodes
	)
	var walk func(n *kyaml.Node, depth int)
	walk = func(n *kyaml.Node, depth int) {
		if depth > yamlsize.MaxDepth || count >= max {
			beyond = true
			return
		}
		count++
		switch n.Kind {
		case kyaml.AliasNode:
			shape.aliased = true
		case kyaml.ScalarNode:
			if n.Value == konfig.BuiltinPluginApiVersion {
				shape.builtinConfig = true
			}
		case kyaml.MappingNode:
			for i := 0; i < len(n.Content); i += 2 {
				if n.Content[i].Value == "<<" {
					shape.mergeKey = true
				}
			}
		}
		if n.Anchor != "" {
			shape.aliased = true
		}
		for _, c := range n.Content {
			if walk(c, depth+1); beyond {
				return
			}
		}
	}
	walk(doc, 0)
	if shape.aliased || beyond {
		n, err := yamlsize.Expanded(doc, max)
		if beyond && err == nil {
			// Not walked to the end (Expanded refuses such a tree): say
			// the most a tree can hold.
			shape = docShape{aliased: true, mergeKey: true, builtinConfig: true}
		}
		return n, shape, err
	}
	return count, shape, nil
}

func (s *sandboxFS) chargeYAML(rel string, nodes int64) error {
	s.mu.Lock()
	s.nodes += nodes
	s.documents++
	n, d := s.nodes, s.documents
	s.mu.Unlock()
	switch {
	case n > s.limits.MaxNodes:
		return limitErr("%s: reading it passes the limit of %d YAML nodes per render, aliases expanded (--max-yaml-nodes)", rel, s.limits.MaxNodes)
	case d > s.limits.MaxDocuments:
		return limitErr("%s: reading it passes the limit of %d YAML documents per render (--max-yaml-documents)", rel, s.limits.MaxDocuments)
	}
	return nil
}

func isKustomizationFile(path string) bool {
	base := filepath.Base(path)
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if base == name {
			return true
		}
	}
	return false
}

// rel names path as it is in the repository.
func (s *sandboxFS) rel(path string) string {
	return displayName(s.root, path)
}

// deadlineErr reports a build stopped by its context.
func deadlineErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return limitErr("rendering did not finish within its time limit (--render-timeout)")
	}
	return limitErr("rendering was cancelled")
}
