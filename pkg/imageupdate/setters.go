package imageupdate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
)

// Limits bound what one run of the setters reads: a repository is
// untrusted input. Zero fields take the defaults (DefaultLimits).
type Limits struct {
	// MaxFiles bounds the entries (files and folders) walked under
	// update.path.
	MaxFiles int
	// MaxFileBytes bounds one YAML file.
	MaxFileBytes int64
	// MaxTotalBytes bounds the YAML files read in all.
	MaxTotalBytes int64
	// MaxChanges bounds the fields changed in one run, and so what a
	// commit message template ranges over.
	MaxChanges int
	// Timeout bounds the walk's time, besides the context's deadline.
	Timeout time.Duration
	// MaxRepositoryBytes bounds the disk Run's checkout uses, Git objects
	// and files (plumb.dev/pkg/diskbudget).
	MaxRepositoryBytes int64
}

// DefaultLimits are generous for a repository of manifests and small
// enough that a hostile tree costs seconds and megabytes, not more.
var DefaultLimits = Limits{
	MaxFiles:      20000,
	MaxFileBytes:  4 << 20,
	MaxTotalBytes: 128 << 20,
	MaxChanges:    1000,
	Timeout:       30 * time.Second,
	// As source-controller's --max-repository-size default.
	MaxRepositoryBytes: 1 << 30,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxFiles > 0 {
		d.MaxFiles = l.MaxFiles
	}
	if l.MaxFileBytes > 0 {
		d.MaxFileBytes = l.MaxFileBytes
	}
	if l.MaxTotalBytes > 0 {
		d.MaxTotalBytes = l.MaxTotalBytes
	}
	if l.MaxChanges > 0 {
		d.MaxChanges = l.MaxChanges
	}
	if l.Timeout > 0 {
		d.Timeout = l.Timeout
	}
	if l.MaxRepositoryBytes > 0 {
		d.MaxRepositoryBytes = l.MaxRepositoryBytes
	}
	return d
}

// ErrLimit is wrapped by the error of a run that passed one of Limits.
var ErrLimit = errors.New("limit exceeded")

// ErrPath is wrapped by the error of an update.path that leaves the
// tree (an absolute path, "..", or a symbolic link on the way).
var ErrPath = errors.New("update.path must stay inside the repository")

// Setters runs the setters strategy over tree (a go-git worktree's
// filesystem, on disk or in memory): every .yaml or .yml file under
// updatePath that holds a marker gets, in each marked field whose value
// differs, the value of the named policy's ref in refs (keyed by
// "namespace:name"). Changed files are rewritten in place, only the
// marked values' bytes replaced.
func Setters(ctx context.Context, tree billy.Filesystem, updatePath string, refs map[string]ImageRef, limits Limits) (Result, error) {
	l := limits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	root, err := safeRoot(tree, updatePath)
	if err != nil {
		return Result{}, err
	}
	w := walker{tree: tree, root: root, refs: refs, limits: l}
	if err := w.walk(ctx, root); err != nil {
		return Result{}, err
	}
	// Nothing is written until every file has been read and checked, so
	// a run that fails leaves the tree as it was.
	for _, f := range w.pending {
		if err := writeFile(tree, f.path, f.content); err != nil {
			return Result{}, fmt.Errorf("writing %s: %w", f.path, err)
		}
		w.result.paths = append(w.result.paths, f.path)
	}
	return w.result, nil
}

// safeRoot cleans updatePath and checks that no part of it is a
// symbolic link and that it does not climb out of the tree.
func safeRoot(tree billy.Filesystem, updatePath string) (string, error) {
	p := strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(updatePath, "\\", "/")), "/")
	if path.IsAbs(updatePath) || slices.Contains(strings.Split(path.Clean(updatePath), "/"), "..") {
		return "", fmt.Errorf("%w: %q", ErrPath, updatePath)
	}
	if p == "" {
		return "", nil
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := tree.Lstat(sub)
		if err != nil {
			return "", fmt.Errorf("update.path %q: %w", updatePath, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("%w: %q is a symbolic link", ErrPath, sub)
		}
	}
	return p, nil
}

type pendingFile struct {
	path    string
	content []byte
}

type walker struct {
	tree    billy.Filesystem
	root    string
	refs    map[string]ImageRef
	limits  Limits
	entries int
	bytes   int64
	changes int
	result  Result
	pending []pendingFile
}

func (w *walker) walk(ctx context.Context, dir string) error {
	fi, err := w.tree.Lstat(cmpOr(dir, "."))
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return w.file(dir, fi)
	}
	entries, err := w.tree.ReadDir(cmpOr(dir, "."))
	if err != nil {
		return fmt.Errorf("reading %s: %w", cmpOr(dir, "."), err)
	}
	slices.SortFunc(entries, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: the walk of update.path took longer than %s: %w", ErrLimit, w.limits.Timeout, err)
		}
		w.entries++
		if w.entries > w.limits.MaxFiles {
			return fmt.Errorf("%w: more than %d files and folders under update.path", ErrLimit, w.limits.MaxFiles)
		}
		p := path.Join(dir, e.Name())
		switch {
		case e.Mode()&os.ModeSymlink != 0:
			// Never followed: a link could lead out of the tree, and
			// what it names inside is walked on its own.
			continue
		case e.IsDir():
			if e.Name() == ".git" {
				continue
			}
			if err := w.walk(ctx, p); err != nil {
				return err
			}
		case e.Mode().IsRegular():
			if err := w.file(p, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// file reads one file; only a YAML file holding the marker token is
// parsed, so Helm templates and other files never are.
func (w *walker) file(p string, fi fs.FileInfo) error {
	if ext := path.Ext(p); ext != ".yaml" && ext != ".yml" {
		return nil
	}
	if fi.Size() > w.limits.MaxFileBytes {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrLimit, p, fi.Size(), w.limits.MaxFileBytes)
	}
	content, err := readFile(w.tree, p, w.limits.MaxFileBytes)
	if err != nil {
		return err
	}
	w.bytes += int64(len(content))
	if w.bytes > w.limits.MaxTotalBytes {
		return fmt.Errorf("%w: the YAML files under update.path hold more than %d bytes", ErrLimit, w.limits.MaxTotalBytes)
	}
	if !bytes.Contains(content, markerToken) {
		return nil
	}
	marks, err := findMarked(content)
	if errors.Is(err, errNotYAML) {
		// Flux skips a file it cannot parse; so does this.
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, w.root), "/")
	if rel == "" {
		rel = path.Base(p)
	}
	var edits []edit
	var changes []marked
	var news []string
	for _, m := range marks {
		v, ok := valueFor(m.setter, w.refs)
		if !ok || v == m.node.Value {
			continue
		}
		start, end, err := locate(content, m.node)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		edits = append(edits, edit{start: start, end: end, text: render(m.node, v)})
		changes = append(changes, m)
		news = append(news, v)
	}
	if len(edits) == 0 {
		return nil
	}
	w.changes += len(edits)
	if w.changes > w.limits.MaxChanges {
		return fmt.Errorf("%w: more than %d marked fields to change", ErrLimit, w.limits.MaxChanges)
	}
	out := apply(content, edits)
	if err := verify(out, changes, news); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for i, m := range changes {
		w.result.add(rel, m.obj, Change{OldValue: m.node.Value, NewValue: news[i], Setter: m.setter})
	}
	w.pending = append(w.pending, pendingFile{path: p, content: out})
	return nil
}

// verify parses the edited file again and checks that its markers now
// hold the new values: an edit that changed the file's meaning in any
// other way is refused before it is written.
func verify(out []byte, changed []marked, news []string) error {
	again, err := findMarked(out)
	if err != nil {
		return fmt.Errorf("the edited file does not parse: %w", err)
	}
	i := 0
	for _, m := range again {
		if i < len(changed) && m.node.Line == changed[i].node.Line && m.setter == changed[i].setter {
			if m.node.Value != news[i] {
				return fmt.Errorf("line %d: the edit reads back as %q, not %q", m.node.Line, m.node.Value, news[i])
			}
			i++
		}
	}
	if i != len(changed) {
		return errors.New("the edited file lost a marker")
	}
	return nil
}

func readFile(tree billy.Filesystem, p string, max int64) ([]byte, error) {
	f, err := tree.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrLimit, p, max)
	}
	return b, nil
}

// writeFile rewrites an existing file; truncating it keeps its mode.
func writeFile(tree billy.Filesystem, p string, content []byte) error {
	f, err := tree.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
