package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	godigest "github.com/opencontainers/go-digest"
)

// Errors an extraction can fail with. Each refusal wraps one of them, so a
// caller can tell them apart with errors.Is while the message names the
// offending entry.
var (
	// ErrDigestMismatch: the archive's sha256 is not the expected one.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrUnsafePath: an entry name is absolute or climbs out with "..".
	ErrUnsafePath = errors.New("unsafe path")
	// ErrUnsafeSymlink: a symbolic link points outside the extraction root.
	ErrUnsafeSymlink = errors.New("symlink leaves the root")
	// ErrUnsupportedEntry: a hard link, device, FIFO, sparse file or other
	// entry type that a source tree never needs.
	ErrUnsupportedEntry = errors.New("unsupported entry type")
	// ErrTooLarge: the archive or its extracted content exceeds a size limit.
	ErrTooLarge = errors.New("archive too large")
	// ErrTooManyFiles: the archive holds more entries than allowed.
	ErrTooManyFiles = errors.New("too many files")
)

// Default limits, used for a zero field of Limits.
const (
	DefaultMaxArchiveBytes   int64 = 100 << 20
	DefaultMaxExtractedBytes int64 = 500 << 20
	DefaultMaxFiles                = 50_000
)

// DefaultMaxRenderedBytes is the largest rendered artifact, in one place
// for its three parties: render-controller writes no more
// (--max-rendered-size, pkg/render's DefaultMaxOutputBytes), and
// sync-controller (--max-artifact-size) and pkg/inspect (`plumb diff`, the
// UI) download no more.
const DefaultMaxRenderedBytes int64 = 64 << 20

// Limits bound what ExtractFile accepts. A zero field takes its default.
type Limits struct {
	// MaxArchiveBytes bounds the compressed archive.
	MaxArchiveBytes int64
	// MaxExtractedBytes bounds the sum of the regular files' sizes.
	MaxExtractedBytes int64
	// MaxFiles bounds the number of entries (files, directories, links).
	MaxFiles int
}

func (l Limits) withDefaults() Limits {
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if l.MaxExtractedBytes <= 0 {
		l.MaxExtractedBytes = DefaultMaxExtractedBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// ParseDigest parses "sha256:<64 lower-case hex digits>". Other algorithms
// are refused: the pipeline only produces sha256.
func ParseDigest(digest string) (godigest.Digest, error) {
	d, err := godigest.Parse(digest)
	if err != nil || d.Algorithm() != godigest.SHA256 {
		return "", fmt.Errorf("digest %q is not of the form sha256:<64 lower-case hex digits>", digest)
	}
	return d, nil
}

// VerifyFile checks that the file at name is at most limits.MaxArchiveBytes
// long and has the expected "sha256:<hex>" digest.
func VerifyFile(name, digest string, limits Limits) error {
	if _, err := ParseDigest(digest); err != nil {
		return err // before the file is opened, as always
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return verify(f, digest, limits.withDefaults())
}

// verify checks that r holds at most limits.MaxArchiveBytes and has the
// expected "sha256:<hex>" digest.
func verify(r io.Reader, digest string, limits Limits) error {
	want, err := ParseDigest(digest)
	if err != nil {
		return err
	}
	h := godigest.SHA256.Digester()
	// Read one byte past the limit to tell "exactly at" from "over".
	n, err := io.Copy(h.Hash(), io.LimitReader(r, limits.MaxArchiveBytes+1))
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	if n > limits.MaxArchiveBytes {
		return fmt.Errorf("%w: the archive is larger than the limit of %d bytes", ErrTooLarge, limits.MaxArchiveBytes)
	}
	if got := h.Digest(); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fmt.Errorf("%w: the archive has %s, expected %s", ErrDigestMismatch, got, digest)
	}
	return nil
}

// ExtractFile verifies the tar.gz file at archive against digest
// ("sha256:<hex>") and only then extracts it into dir, which must not exist
// or be empty. It refuses absolute entry names and names with "..", symbolic
// links that resolve outside dir, hard links, devices, FIFOs and other
// special entries, and archives beyond the limits. On any error dir may hold
// a partial tree: the caller must discard it, never use it.
func ExtractFile(archive, digest, dir string, limits Limits) error {
	limits = limits.withDefaults()
	if err := VerifyFile(archive, digest, limits); err != nil {
		return err
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = untar(f, dir, limits)
	return err
}

// ExtractBytes is ExtractFile for an archive already in memory (as
// pkg/fetch returns it): it checks data's size and digest, extracts it
// into dir on the same terms, and returns what the tree costs on disk
// (DiskBytes).
func ExtractBytes(data []byte, digest, dir string, limits Limits) (int64, error) {
	limits = limits.withDefaults()
	if err := verify(bytes.NewReader(data), digest, limits); err != nil {
		return 0, err
	}
	return untar(bytes.NewReader(data), dir, limits)
}

// BlockBytes is the file system block a file, a folder or a link takes at
// least on disk.
const BlockBytes = 4096

// untar extracts a gzip-compressed tar stream into dir without checking any
// digest (ExtractFile and ExtractBytes are the entry points that do) and
// returns what the tree costs on disk: every regular file rounded up to
// whole blocks of BlockBytes (an empty one a block too), and a block for
// every folder (those the archive names and those its paths imply) and
// link. A tree of many empty folders costs its blocks, not nothing.
func untar(r io.Reader, dir string, limits Limits) (int64, error) {
	limits = limits.withDefaults()
	root, err := freshDir(dir)
	if err != nil {
		return 0, err
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return 0, fmt.Errorf("reading the archive: not gzip: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)

	var (
		files    int
		written  int64
		symlinks []string
		seen     = map[string]bool{}
		folders  = map[string]bool{}
		disk     int64
		// made holds the folders this extraction made or found real:
		// one stays so (no entry removes a folder, and a link or file
		// cannot be created over it), so its parents are looked at once
		// per extraction rather than once per file below them.
		made = map[string]bool{}
	)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("reading the archive: %w", err)
		}
		files++
		if files > limits.MaxFiles {
			return 0, fmt.Errorf("%w: the archive holds more than %d entries", ErrTooManyFiles, limits.MaxFiles)
		}
		rel, err := entryPath(hdr.Name)
		if err != nil {
			return 0, err
		}
		if rel == "." {
			if hdr.Typeflag == tar.TypeDir {
				continue
			}
			return 0, fmt.Errorf("%w: entry %q is the root itself", ErrUnsafePath, hdr.Name)
		}
		if hdr.Typeflag != tar.TypeDir {
			if seen[rel] {
				return 0, fmt.Errorf("%w: entry %q appears twice", ErrUnsafePath, hdr.Name)
			}
			seen[rel] = true
		}
		for d := path.Dir(rel); d != "." && !folders[d]; d = path.Dir(d) {
			folders[d] = true
		}
		target := filepath.Join(root, filepath.FromSlash(rel))
		if err := mkdirParents(root, rel, made); err != nil {
			return 0, err
		}

		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := mkdirReal(target); err != nil {
				return 0, fmt.Errorf("%w: directory %q: %v", ErrUnsafePath, hdr.Name, err)
			}
			folders[rel] = true
			made[rel] = true
		case tar.TypeReg: // archive/tar reads the legacy TypeRegA as TypeReg
			if hdr.Size < 0 || hdr.Size > limits.MaxExtractedBytes-written {
				return 0, fmt.Errorf("%w: extracting %q would exceed the limit of %d extracted bytes", ErrTooLarge, hdr.Name, limits.MaxExtractedBytes)
			}
			if err := extractRegular(target, tr, hdr); err != nil {
				return 0, err
			}
			written += hdr.Size
			disk += max(BlockBytes, (hdr.Size+BlockBytes-1)/BlockBytes*BlockBytes)
		case tar.TypeSymlink:
			if err := checkLinkTarget(rel, hdr.Linkname); err != nil {
				return 0, err
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return 0, fmt.Errorf("%w: symlink %q: %v", ErrUnsafePath, hdr.Name, err)
			}
			symlinks = append(symlinks, rel)
			disk += BlockBytes
		case tar.TypeLink:
			return 0, fmt.Errorf("%w: hard link %q -> %q", ErrUnsupportedEntry, hdr.Name, hdr.Linkname)
		case tar.TypeChar, tar.TypeBlock:
			return 0, fmt.Errorf("%w: device file %q", ErrUnsupportedEntry, hdr.Name)
		case tar.TypeFifo:
			return 0, fmt.Errorf("%w: FIFO %q", ErrUnsupportedEntry, hdr.Name)
		default:
			return 0, fmt.Errorf("%w: entry %q has type %q", ErrUnsupportedEntry, hdr.Name, string(hdr.Typeflag))
		}
	}

	// Each link was checked lexically when it was written, but a chain of
	// links can still leave the root ("a" -> "b/..", "b" -> ".."), so once
	// the whole tree exists every link is resolved through the real tree.
	for _, rel := range symlinks {
		if err := resolveInRoot(root, rel); err != nil {
			return 0, err
		}
	}
	return disk + int64(len(folders))*BlockBytes, nil
}

// freshDir creates dir (or accepts an empty one) and returns its absolute
// path with symlinks resolved, so later containment checks compare like with
// like.
func freshDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("extraction directory %s is not empty", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// entryPath validates a tar entry name and returns it cleaned, slash
// separated and relative.
func entryPath(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: entry with an empty name", ErrUnsafePath)
	}
	if strings.ContainsRune(name, 0) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("%w: entry %q has a NUL or backslash in its name", ErrUnsafePath, name)
	}
	if path.IsAbs(name) || filepath.IsAbs(name) || filepath.VolumeName(name) != "" {
		return "", fmt.Errorf("%w: entry %q has an absolute path", ErrUnsafePath, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: entry %q contains \"..\"", ErrUnsafePath, name)
		}
	}
	return path.Clean(name), nil
}

// checkLinkTarget refuses a symlink target that is absolute or, resolved
// lexically from the link's folder, leaves the root.
func checkLinkTarget(rel, target string) error {
	if target == "" {
		return fmt.Errorf("%w: symlink %q has an empty target", ErrUnsafeSymlink, rel)
	}
	if strings.ContainsRune(target, 0) || path.IsAbs(target) || filepath.IsAbs(target) || filepath.VolumeName(target) != "" || strings.Contains(target, `\`) {
		return fmt.Errorf("%w: symlink %q -> %q points to an absolute path", ErrUnsafeSymlink, rel, target)
	}
	if escapes(path.Join(path.Dir(rel), target)) {
		return fmt.Errorf("%w: symlink %q -> %q points outside the root", ErrUnsafeSymlink, rel, target)
	}
	return nil
}

// escapes reports whether a cleaned relative path climbs above its root.
func escapes(p string) bool {
	p = path.Clean(p)
	return p == ".." || strings.HasPrefix(p, "../")
}

// mkdirParents creates the parent folders of rel below root, refusing to go
// through anything that is not a real directory (a symlink above all): the
// extractor never writes through a link.
func mkdirParents(root, rel string, made map[string]bool) error {
	dir := path.Dir(rel)
	if dir == "." || made[dir] {
		return nil
	}
	cur, prefix := root, ""
	for _, part := range strings.Split(dir, "/") {
		cur = filepath.Join(cur, part)
		prefix = path.Join(prefix, part)
		if made[prefix] {
			continue
		}
		if err := mkdirReal(cur); err != nil {
			return fmt.Errorf("%w: entry %q: %v", ErrUnsafePath, rel, err)
		}
		made[prefix] = true
	}
	return nil
}

// mkdirReal makes dir, or accepts it when it already is a real directory.
func mkdirReal(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a directory", filepath.Base(dir))
	case errors.Is(err, os.ErrNotExist):
		return os.Mkdir(dir, 0o755)
	default:
		return err
	}
}

// extractRegular writes one regular file, creating it exclusively so it can never
// follow an existing link. Only the owner-execute bit is kept from the
// archive: no setuid, no world-writable files.
func extractRegular(target string, r io.Reader, hdr *tar.Header) error {
	mode := os.FileMode(0o644)
	if hdr.Mode&0o100 != 0 {
		mode = 0o755
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("%w: file %q: %v", ErrUnsafePath, hdr.Name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, hdr.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extracting %q: %w", hdr.Name, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("extracting %q: truncated archive (%d of %d bytes)", hdr.Name, n, hdr.Size)
	}
	return nil
}

// maxLinkHops bounds link resolution, like the kernel's ELOOP limit.
const maxLinkHops = 40

// resolveInRoot follows the link at rel component by component through the
// real tree below root and fails when any step leaves root. Components that
// do not exist cannot be links, so the rest of such a path is resolved
// lexically.
func resolveInRoot(root, rel string) error {
	var (
		stack []string
		hops  int
	)
	pending := strings.Split(rel, "/")
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return fmt.Errorf("%w: symlink %q resolves outside the root", ErrUnsafeSymlink, rel)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, part)
		cur := filepath.Join(append([]string{root}, stack...)...)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("resolving symlink %q: %w", rel, err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		hops++
		if hops > maxLinkHops {
			return fmt.Errorf("%w: symlink %q has too many levels of links", ErrUnsafeSymlink, rel)
		}
		target, err := os.Readlink(cur)
		if err != nil {
			return fmt.Errorf("resolving symlink %q: %w", rel, err)
		}
		if path.IsAbs(target) || filepath.IsAbs(target) {
			return fmt.Errorf("%w: symlink %q resolves through an absolute link", ErrUnsafeSymlink, rel)
		}
		stack = stack[:len(stack)-1]
		pending = append(strings.Split(target, "/"), pending...)
	}
	return nil
}
