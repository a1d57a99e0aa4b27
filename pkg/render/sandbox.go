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
	if err := s.alive(); err != nil {
		return nil, err
	}
	rel := s.rel(path)
	real, data, err := s.readBounded(path, rel)
	if err != nil {
		return nil, err
	}
	if s.decryptor != nil {
		if isKustomizationFile(path) {
			s.noteSources(path, data)
		} else if data, err = s.decryptSource(real, rel, data); err != nil {
			return nil, err
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
	if s.firstRead(key) {
		if err := s.inspect(rel, filepath.Dir(path), data, kustomization); err != nil {
			return nil, s.refuse(err)
		}
	}
	if kustomization {
		// kustomize reads exactly the bytes that were checked: a rewrite
		// (nameGenerated re-encodes documents) could change what its
		// decoder sees.
		return data, nil
	}
	return nameGenerated(data, &s.generated), nil
}

// readBounded reads the file at path (a virtual one, or from disk inside
// the source) within the byte budget and returns its real path.
func (s *sandboxFS) readBounded(path, rel string) (string, []byte, error) {
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
	f, err := os.Open(real)
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
	// A file that grew since Stat is read no further than its budget.
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()))
	return real, data, err
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
// before kustomize acts on any of it.
func (s *sandboxFS) inspect(rel, dir string, data []byte, kustomization bool) error {
	docs, err := s.parse(rel, data)
	if err != nil {
		return err
	}
	if docs == nil && len(bytes.TrimSpace(data)) > 0 {
		if kustomization {
			return buildErr("%s: not a YAML file", rel)
		}
		// Not YAML to a strict parser; if kustomize's reader (which splits
		// documents its own way) makes objects of it, its documents were
		// neither counted nor checked: refuse it rather than let it by.
		if nodes, err := resourceFactory.RNodesFromBytes(data); err == nil && len(nodes) > 0 {
			return buildErr("%s: YAML that kustomize reads differently from a strict YAML parser", rel)
		}
		return nil
	}
	if kustomization {
		return s.inspectKustomization(rel, dir, data)
	}
	if !holdsScalar(docs, konfig.BuiltinPluginApiVersion) {
		return nil // no object can be a builtin config: nothing to decode again
	}
	// The objects as kustomize makes them of the file (its documents split
	// its way, anchors and merge keys resolved, Lists unwrapped): the
	// kind and apiVersion it decides a plugin by are these.
	nodes, err := resourceFactory.RNodesFromBytes(data)
	if err != nil {
		return nil // kustomize cannot read the file as objects either
	}
	for _, n := range nodes {
		if n.GetApiVersion() != konfig.BuiltinPluginApiVersion {
			continue // not builtin: with plugins disabled, kustomize refuses it as a plugin
		}
		text, err := n.MarshalJSON()
		if err != nil {
			return buildErr("%s: %v", rel, err)
		}
		if err := checkPluginConfig(rel, n.GetKind(), text); err != nil {
			return err
		}
	}
	return nil
}

// holdsScalar reports whether any scalar of docs has the value v (its
// escapes resolved, as a parser reads it).
func holdsScalar(docs []*kyaml.Node, v string) bool {
	var walk func(n *kyaml.Node) bool
	walk = func(n *kyaml.Node) bool {
		if n.Kind == kyaml.ScalarNode {
			return n.Value == v
		}
		return slices.ContainsFunc(n.Content, walk)
	}
	return slices.ContainsFunc(docs, walk)
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
		if err := s.inspect(rel+" (inline)", "", []byte(text), false); err != nil {
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

// parse decodes data into its YAML documents, aliases kept as references,
// and charges them to the budgets. It returns nil for data that is not
// YAML.
func (s *sandboxFS) parse(rel string, data []byte) ([]*kyaml.Node, error) {
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	var docs []*kyaml.Node
	for {
		var doc kyaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, nil
		}
		n, err := yamlsize.Expanded(&doc, s.limits.MaxNodes)
		if err != nil {
			return nil, limitErr("%s: %v", rel, err)
		}
		if err := s.chargeYAML(rel, n); err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
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
