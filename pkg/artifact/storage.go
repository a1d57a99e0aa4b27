package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// tmpPrefix starts the name of every file being written; such files are
// never served and are removed by retention when left behind by a crash.
const tmpPrefix = ".tmp-"

// staleTemp is how old a leftover temporary file must be before retention
// removes it, so a write in progress is never pulled from under a writer.
const staleTemp = time.Hour

// Ref names the folder of one object in the storage:
// <kind>/<namespace>/<name>, Kind in lower case.
type Ref struct {
	Kind      string
	Namespace string
	Name      string
}

// Dir returns the object's folder relative to the storage root, with
// forward slashes.
func (r Ref) Dir() string {
	return path.Join(strings.ToLower(r.Kind), r.Namespace, r.Name)
}

func (r Ref) validate() error {
	for _, s := range []string{r.Kind, r.Namespace, r.Name} {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
			return fmt.Errorf("invalid storage reference %q", r.Dir())
		}
	}
	return nil
}

// Storage is a folder of artifacts served over HTTP; see the package doc.
type Storage struct {
	// BasePath is the storage root (--storage-path).
	BasePath string
	// Hostname is host[:port] put in artifact URLs (--storage-adv-addr).
	Hostname string
	// Retention is how many files are kept per object.
	Retention int
	// Rebuilt says that every file can be made again from what is kept
	// elsewhere and is checked against its digest by each reader, so a
	// write is renamed into place without being synced to the disk first.
	// render-controller's renders are so: a source artifact and a spec
	// make the same bytes again, sync-controller verifies each download,
	// and a render that no longer verifies in storage is rendered again
	// under the same name (content-addressed). A source artifact is a
	// fetch from outside and is synced. On the development machine an
	// fsync made a small write cost 0.4 ms of CPU instead of 0.1 ms and
	// 4–20 ms of the writer's time instead of 1–2 ms (docs/design/scale.md).
	Rebuilt bool
}

// NewStorage returns a storage rooted at basePath, creating the folder.
// advAddr is the host[:port] of artifact URLs; a leading ":" (as in ":9090")
// is completed with "localhost". retention below 1 is taken as 1.
func NewStorage(basePath, advAddr string, retention int) (*Storage, error) {
	if basePath == "" {
		return nil, errors.New("the storage path is empty")
	}
	abs, err := filepath.Abs(basePath)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("creating the storage folder: %w", err)
	}
	if strings.HasPrefix(advAddr, ":") {
		advAddr = "localhost" + advAddr
	}
	if retention < 1 {
		retention = 1
	}
	return &Storage{BasePath: abs, Hostname: advAddr, Retention: retention}, nil
}

// RelPath returns the path of an object's file relative to the storage root.
func (s *Storage) RelPath(ref Ref, filename string) string {
	return path.Join(ref.Dir(), filename)
}

// LocalPath returns the file system path of a storage-relative path. The
// path is cleaned and kept inside the storage root.
func (s *Storage) LocalPath(rel string) string {
	clean := path.Clean("/" + rel)
	return filepath.Join(s.BasePath, filepath.FromSlash(clean))
}

// URL returns the HTTP address of a storage-relative path.
func (s *Storage) URL(rel string) string {
	u := url.URL{Scheme: "http", Host: s.Hostname, Path: "/" + strings.TrimPrefix(path.Clean("/"+rel), "/")}
	return u.String()
}

// syncFile flushes a written file to the disk; a variable so that a test
// can count the calls.
var syncFile = (*os.File).Sync

// Store writes r to the object's file filename atomically (temporary file,
// fsync unless Rebuilt, rename) and returns its artifact descriptor with Path, URL, Digest,
// Size and LastUpdateTime set; the caller sets Revision.
func (s *Storage) Store(ctx context.Context, ref Ref, filename string, r io.Reader) (*meta.Artifact, error) {
	return s.write(ref, filename, func(w io.Writer) error {
		_, err := io.Copy(w, readerCtx{ctx, r})
		return err
	})
}

// StoreFile copies the file at src into the storage as Store does.
func (s *Storage) StoreFile(ctx context.Context, ref Ref, filename, src string) (*meta.Artifact, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s.Store(ctx, ref, filename, f)
}

// Pack packs the tree under dir (see Pack) straight into the object's file
// filename, atomically, and returns its descriptor as Store does.
func (s *Storage) Pack(ctx context.Context, ref Ref, filename, dir string, opts PackOptions) (*meta.Artifact, error) {
	return s.write(ref, filename, func(w io.Writer) error { return Pack(ctx, w, dir, opts) })
}

func (s *Storage) write(ref Ref, filename string, fill func(io.Writer) error) (*meta.Artifact, error) {
	if err := ref.validate(); err != nil {
		return nil, err
	}
	if filename == "" || filename != path.Base(filename) || strings.HasPrefix(filename, tmpPrefix) || filename == "." || filename == ".." {
		return nil, fmt.Errorf("invalid artifact file name %q", filename)
	}
	rel := s.RelPath(ref, filename)
	dst := s.LocalPath(rel)
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file in %s: %w", dir, err)
	}
	// The temporary file goes unless it was renamed into place: an unlink
	// after every store would be one more system call that fails.
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(tmp, h)}
	if err := fill(cw); err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	if !s.Rebuilt {
		if err := syncFile(tmp); err != nil {
			return nil, fmt.Errorf("syncing %s: %w", rel, err)
		}
	}
	// The mode and the modification time through the open file, not its
	// name: a render stores a small file, so a store's cost is mostly its
	// system calls and their path lookups (docs/bench/fleet.md, "Fleet
	// runs P1–P3"). Renaming keeps both.
	if err := tmp.Chmod(0o644); err != nil {
		return nil, err
	}
	fi, err := tmp.Stat()
	if err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, fmt.Errorf("moving %s into place: %w", rel, err)
	}
	renamed = true
	size := cw.n
	return &meta.Artifact{
		Path:   rel,
		URL:    s.URL(rel),
		Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)),
		Size:   &size,
		// In whole seconds, as status keeps it (metav1.Time's JSON): the
		// descriptor is compared with copies of itself read back from the
		// API server, and with nanoseconds no copy was ever equal to it —
		// render-controller took a render sync-controller had written to
		// status from the feed for one it had not (docs/bench/fleet.md,
		// "Fleet runs S1–S3").
		LastUpdateTime: metav1.NewTime(fi.ModTime().Truncate(time.Second)),
	}, nil
}

// Exists reports whether the artifact's file is in storage.
func (s *Storage) Exists(a *meta.Artifact) bool {
	if a == nil || a.Path == "" {
		return false
	}
	fi, err := os.Stat(s.LocalPath(a.Path))
	return err == nil && fi.Mode().IsRegular()
}

// Verify re-hashes the artifact's stored file and compares the result with
// a.Digest (and a.Size when set). It returns an error wrapping
// os.ErrNotExist when the file is missing and ErrDigestMismatch (declared in
// extract.go) when the content differs.
func (s *Storage) Verify(a *meta.Artifact) error {
	if a == nil || a.Path == "" {
		return fmt.Errorf("no artifact: %w", os.ErrNotExist)
	}
	digest, size, err := s.Digest(a.Path)
	if err != nil {
		return err
	}
	if a.Digest != "" && digest != a.Digest {
		return fmt.Errorf("%s has digest %s, want %s: %w", a.Path, digest, a.Digest, ErrDigestMismatch)
	}
	if a.Size != nil && size != *a.Size {
		return fmt.Errorf("%s has %d bytes, want %d: %w", a.Path, size, *a.Size, ErrDigestMismatch)
	}
	return nil
}

// Digest returns the "sha256:<hex>" digest and size of a stored file.
func (s *Storage) Digest(rel string) (string, int64, error) {
	f, err := os.Open(s.LocalPath(rel))
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return digestString(h), n, nil
}

func digestString(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// GarbageCollect keeps the newest Retention files of the object's folder
// (newest by modification time) plus the files named in keep, deletes the
// others and temporary files older than an hour, and returns the
// storage-relative paths it deleted.
func (s *Storage) GarbageCollect(ctx context.Context, ref Ref, keep ...string) ([]string, error) {
	if err := ref.validate(); err != nil {
		return nil, err
	}
	dir := s.LocalPath(ref.Dir())
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[path.Base(k)] = true
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	var deleted []string
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if time.Since(fi.ModTime()) > staleTemp {
				if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
					deleted = append(deleted, s.RelPath(ref, e.Name()))
				}
			}
			continue
		}
		files = append(files, file{e.Name(), fi.ModTime()})
	}
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].mod.Equal(files[j].mod) {
			return files[i].mod.After(files[j].mod)
		}
		return files[i].name < files[j].name
	})
	// The kept files take their slots first; the newest others fill the rest.
	slots := s.Retention
	for _, f := range files {
		if kept[f.name] {
			slots--
		}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		if kept[f.name] {
			continue
		}
		if slots > 0 {
			slots--
			continue
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, s.RelPath(ref, f.name))
	}
	return deleted, errors.Join(errs...)
}

// Remove deletes the object's folder and everything in it; the folders of
// the namespace and kind are removed too when they become empty.
func (s *Storage) Remove(ref Ref) error {
	if err := ref.validate(); err != nil {
		return err
	}
	dir := s.LocalPath(ref.Dir())
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", ref.Dir(), err)
	}
	// Best effort: these fail harmlessly when another object still has files.
	ns := filepath.Dir(dir)
	_ = os.Remove(ns)
	return nil
}

// ErrListTruncated is wrapped by the error of a List that read its
// limit of folder entries before the end.
var ErrListTruncated = errors.New("the storage listing was cut at its limit")

// listBatch is how many folder entries List reads at a time: memory is
// bounded by the batch and the result, never by a folder's size.
const listBatch = 256

// List returns the objects of kind that have a folder in storage
// (<kind>/<namespace>/<name>), in no particular order. It reads at most
// limit folder entries in all, files and folders of both levels counted
// (a folder of a million stray files costs the limit, not a million
// entries in memory); once it has read limit entries it stops and returns
// what it found with an error wrapping ErrListTruncated. Anything that is not a folder with a valid
// name (files, symbolic links, ".tmp-" leftovers) is skipped. A kind with
// no folder lists nothing.
func (s *Storage) List(ctx context.Context, kind string, limit int) ([]Ref, error) {
	if kind == "" || kind == "." || kind == ".." || strings.ContainsAny(kind, `/\`) {
		return nil, fmt.Errorf("invalid storage kind %q", kind)
	}
	budget := limit
	var refs []Ref
	kindDir := s.LocalPath(strings.ToLower(kind))
	err := readDirs(ctx, kindDir, &budget, func(ns string) error {
		return readDirs(ctx, filepath.Join(kindDir, ns), &budget, func(name string) error {
			refs = append(refs, Ref{Kind: kind, Namespace: ns, Name: name})
			return nil
		})
	})
	return refs, err
}

// readDirs calls fn with the name of each valid sub-folder of dir,
// reading in batches and charging every entry read to budget.
func readDirs(ctx context.Context, dir string, budget *int, fn func(name string) error) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // removed meanwhile (an object deleted): nothing to list
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if *budget <= 0 {
			return fmt.Errorf("%w after reading %s", ErrListTruncated, dir)
		}
		entries, err := f.ReadDir(min(listBatch, *budget))
		*budget -= len(entries)
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || name == "." || name == ".." || strings.HasPrefix(name, tmpPrefix) {
				continue
			}
			if ferr := fn(name); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Touch sets the modification time of a stored file to now, so retention
// counts it as the newest again.
func (s *Storage) Touch(rel string) error {
	now := time.Now()
	return os.Chtimes(s.LocalPath(rel), now, now)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
