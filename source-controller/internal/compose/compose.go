package compose

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrUnsafePath is wrapped by the error of a path that leaves its source
// or the artifact: "..", an absolute path, a symlink pointing out.
var ErrUnsafePath = errors.New("unsafe path")

// ErrTooLarge is wrapped by the error of an output over its Limits.
var ErrTooLarge = errors.New("the artifact is too large")

// Limits bound one output artifact.
type Limits struct {
	// MaxFiles bounds the number of files written.
	MaxFiles int
	// MaxBytes bounds the sum of their sizes.
	MaxBytes int64
	// MaxMergeBytes bounds each file a Merge reads, which is parsed whole
	// in memory (both the file merged and the one merged into); 0 is
	// DefaultMaxMergeBytes.
	MaxMergeBytes int64
}

// DefaultMaxMergeBytes is the largest YAML file Merge reads: a values file
// is kilobytes, and a parsed YAML document takes many times its size in
// memory, so the bound is far below MaxBytes.
const DefaultMaxMergeBytes int64 = 4 << 20

// Copy is one copy operation, its paths without the "@alias/" and
// "@artifact/" prefixes (those are the caller's to resolve).
type Copy struct {
	// From is the path or glob in the source; To the destination in the
	// artifact. A To ending in "/" (or empty) is a folder.
	From, To string
	Exclude  []string
	// Merge merges YAML files into those already at the destination.
	Merge bool
}

// Output is an artifact's folder being filled, bounded by its limits.
type Output struct {
	dir    string
	limits Limits
	files  map[string]int64 // written files and their sizes, by slash path
	bytes  int64
}

// NewOutput returns an Output that writes below dir, which must exist.
func NewOutput(dir string, limits Limits) *Output {
	return &Output{dir: dir, limits: limits, files: map[string]int64{}}
}

// Files returns the number of files written.
func (o *Output) Files() int { return len(o.files) }

// Apply carries out c, reading from the source tree at root (named alias
// in messages). It fails when nothing matches From, as a misspelt path is
// better told than packed into an empty artifact.
func (o *Output) Apply(alias, root string, c Copy) error {
	from, err := cleanRel(c.From)
	if err != nil {
		return fmt.Errorf("from @%s/%s: %w", alias, c.From, err)
	}
	to, err := cleanRel(c.To)
	if err != nil {
		return fmt.Errorf("to @artifact/%s: %w", c.To, err)
	}
	toDir := c.To == "" || strings.HasSuffix(c.To, "/")
	for _, p := range c.Exclude {
		if !validPattern(p) {
			return fmt.Errorf("exclude %q: malformed glob", p)
		}
	}
	prefix, rest := splitGlob(from)
	if rest != "" && !validPattern(rest) {
		return fmt.Errorf("from @%s/%s: malformed glob", alias, c.From)
	}
	pairs, err := o.plan(root, from, prefix, rest, to, toDir, c)
	if err != nil {
		return fmt.Errorf("from @%s/%s: %w", alias, c.From, err)
	}
	if len(pairs) == 0 {
		return fmt.Errorf("from @%s/%s: no file matches", alias, c.From)
	}
	for _, p := range pairs {
		if err := o.write(root, p.src, p.dst, c.Merge); err != nil {
			return fmt.Errorf("from @%s/%s: %w", alias, p.src, err)
		}
	}
	return nil
}

// pair is one file to copy: its slash path in the source and in the
// artifact.
type pair struct{ src, dst string }

// plan lists the files c copies, in lexical order of their source paths.
func (o *Output) plan(root, from, prefix, rest, to string, toDir bool, c Copy) ([]pair, error) {
	var out []pair
	add := func(src, rel string) {
		if excluded(c.Exclude, rel, src) {
			return
		}
		out = append(out, pair{src: src, dst: joinRel(to, rel)})
	}
	if rest == "" {
		// A plain path: a file, or a folder copied as a folder (its own
		// name kept, as cp -r does), the root's contents for "".
		info, err := lstatIn(root, from)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			dst := to
			if toDir {
				dst = joinRel(to, path.Base(from))
			}
			if !excluded(c.Exclude, path.Base(from), from) {
				out = append(out, pair{src: from, dst: dst})
			}
			return out, nil
		}
		files, err := walkFiles(root, from)
		if err != nil {
			return nil, err
		}
		base := ""
		if from != "" && from != "." {
			base = path.Base(from)
		}
		for _, f := range files {
			add(f, joinRel(base, relTo(from, f)))
		}
		return out, nil
	}
	// A glob: every file below the prefix whose path, or the path of one
	// of its folders, matches (a matched folder is copied whole); its path
	// in the artifact is its path below the prefix.
	if _, err := lstatIn(root, prefix); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	files, err := walkFiles(root, prefix)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		rel := relTo(prefix, f)
		elems := strings.Split(rel, "/")
		for i := len(elems); i >= 1; i-- {
			if match(rest, strings.Join(elems[:i], "/")) {
				add(f, rel)
				break
			}
		}
	}
	return out, nil
}

// write copies the source file src to the artifact's dst, or merges it
// into the file there.
func (o *Output) write(root, src, dst string, merge bool) error {
	if dst == "" || dst == "." {
		return fmt.Errorf("%w: no file name to write %s to", ErrUnsafePath, src)
	}
	real, err := resolveFile(root, src)
	if err != nil {
		return err
	}
	target := filepath.Join(o.dir, filepath.FromSlash(dst))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("making the folder of %s in the artifact: %w", dst, err)
	}
	prev, exists := o.files[dst]
	if merge && exists {
		return o.merge(real, target, dst, prev)
	}
	info, err := os.Stat(real)
	if err != nil {
		return err
	}
	if err := o.account(dst, info.Size(), prev, exists); err != nil {
		return err
	}
	in, err := os.Open(real)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s in the artifact: %w", dst, err)
	}
	// The size was checked on Stat; the copy is bounded too, should the
	// file grow in between.
	if _, err := io.Copy(f, io.LimitReader(in, info.Size())); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// account checks that writing size bytes at dst keeps the output within
// its limits, and records it.
func (o *Output) account(dst string, size, prev int64, exists bool) error {
	files, total := len(o.files), o.bytes+size
	if exists {
		total -= prev
	} else {
		files++
	}
	if o.limits.MaxFiles > 0 && files > o.limits.MaxFiles {
		return fmt.Errorf("%w: more than %d files", ErrTooLarge, o.limits.MaxFiles)
	}
	if o.limits.MaxBytes > 0 && total > o.limits.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, o.limits.MaxBytes)
	}
	o.files[dst], o.bytes = size, total
	return nil
}

// cleanRel cleans a relative slash path, refusing one that is absolute or
// has a ".." element; "" and "." are the root, returned as "".
func cleanRel(p string) (string, error) {
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return "", fmt.Errorf("%w: %q is absolute or not a slash path", ErrUnsafePath, p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", fmt.Errorf("%w: %q leaves its root (\"..\")", ErrUnsafePath, p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", nil
	}
	return c, nil
}

func joinRel(a, b string) string {
	j := path.Join(a, b)
	if j == "." {
		return ""
	}
	return j
}

// relTo is f's path below the folder dir ("" for the root).
func relTo(dir, f string) string {
	if dir == "" {
		return f
	}
	return strings.TrimPrefix(f, dir+"/")
}

// lstatIn stats rel below root without following a final symlink, having
// checked that no folder on the way is one (a link to a folder is not
// descended).
func lstatIn(root, rel string) (fs.FileInfo, error) {
	cur := root
	elems := []string{}
	if rel != "" {
		elems = strings.Split(rel, "/")
	}
	info, err := os.Lstat(cur)
	for i, e := range elems {
		if err != nil {
			return nil, err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s is a symlink, not followed", ErrUnsafePath, strings.Join(elems[:i], "/"))
		}
		cur = filepath.Join(cur, e)
		info, err = os.Lstat(cur)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return info, nil
}

// walkFiles lists the files (regular files and symlinks) below rel, in
// lexical order, as slash paths below root. Links to folders are listed
// too, and refused when written.
func walkFiles(root, rel string) ([]string, error) {
	var out []string
	start := filepath.Join(root, filepath.FromSlash(rel))
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(r))
		return nil
	})
	sort.Strings(out)
	return out, err
}

// resolveFile returns the file system path of the regular file at rel
// below root, following a symlink only to a regular file inside root.
func resolveFile(root, rel string) (string, error) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	info, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if info.Mode().IsRegular() {
		return p, nil
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return "", fmt.Errorf("%s is not a regular file", rel)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: symlink %s does not resolve: %v", ErrUnsafePath, rel, err)
	}
	inside, err := filepath.Rel(realRoot, real)
	if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: symlink %s points outside the source", ErrUnsafePath, rel)
	}
	if info, err := os.Stat(real); err != nil || !info.Mode().IsRegular() {
		return "", fmt.Errorf("%w: symlink %s is not a link to a regular file", ErrUnsafePath, rel)
	}
	return real, nil
}
