package sourcetree

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/render"
)

// Defaults for a zero Options field.
const (
	// DefaultMaxBytes is the extracted bytes of the trees kept: twice the
	// largest tree --max-extracted-size allows by default.
	DefaultMaxBytes int64 = 1 << 30
	// DefaultMaxTrees bounds the trees kept whatever their size (a tree of
	// empty files costs its entries).
	DefaultMaxTrees = 1024
)

// folderPrefix names this package's folders under the temporary folder:
// render-sources-<pid>-<random> while a cache uses it, and
// render-sources-closed-<pid>-<random> once it is closed.
const (
	folderPrefix = "render-sources-"
	closedMark   = "closed-"
)

// madeHere holds the folders this process's caches made: a folder with
// this process's pid that is not among them is an earlier process's (a
// restarted container has the same pid).
var madeHere sync.Map

// Options configure a Cache.
type Options struct {
	// Dir is where the cache makes its folder; "" is os.TempDir().
	Dir string
	// MaxBytes and MaxTrees bound the trees kept (zero: the defaults).
	MaxBytes int64
	MaxTrees int
	// Limits bound each archive and its extraction (pkg/artifact).
	Limits artifact.Limits
}

// Cache holds the extracted source trees, one per digest.
type Cache struct {
	opts Options
	dir  string

	mu      sync.Mutex
	trees   map[string]*tree
	idle    *list.List // trees with no user, least recently used first
	bytes   int64      // extracted bytes of every tree in trees
	counter int
}

// tree is one digest's extracted source.
type tree struct {
	digest string
	dir    string
	bytes  int64
	users  int
	idleAt *list.Element // in Cache.idle while users == 0
	ready  chan struct{}
	err    error // set before ready is closed
}

// New makes the cache's folder and removes, in the background, the folders
// of caches closed and of processes that are gone.
func New(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxTrees <= 0 {
		opts.MaxTrees = DefaultMaxTrees
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	// Listed before this cache's own folder exists, so that it is not
	// among them.
	abandoned := abandonedFolders(opts.Dir)
	go removeAll(abandoned)
	dir, err := os.MkdirTemp(opts.Dir, folderPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	madeHere.Store(dir, true)
	return &Cache{opts: opts, dir: dir, trees: map[string]*tree{}, idle: list.New()}, nil
}

// abandonedFolders lists the folders of earlier caches: those closed,
// this pid's (a restarted container gets the same one) and those of pids
// that no longer run.
func abandonedFolders(parent string) []string {
	matches, _ := filepath.Glob(filepath.Join(parent, folderPrefix+"*"))
	var abandoned []string
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), folderPrefix)
		if strings.HasPrefix(rest, closedMark) {
			abandoned = append(abandoned, m)
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if _, mine := madeHere.Load(m); mine {
			continue // another Cache of this process, in use
		}
		if pid == os.Getpid() || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			abandoned = append(abandoned, m)
		}
	}
	return abandoned
}

// removeAll removes folders. Errors are ignored: a folder is only disk,
// and one left is found again by the next New.
func removeAll(folders []string) {
	for _, f := range folders {
		_ = os.RemoveAll(f)
	}
}

// Close gives the trees up: their folder is renamed as closed, one
// rename however many trees it holds, and removed by the next New in the
// same folder (the next start). Acquire must not be called after it.
//
// Why not remove them here: a fleet's trees are thousands of files
// (3,000 for the benchmark's 1,000 Kustomizations, 15,000 for 5,000), and
// removing them was a third to a half of render-controller's stop after
// a fleet sync (0.8–1.9 s of 2.4–3.5 s at 1,000; docs/bench/fleet.md,
// "Fleet runs K1–K3"), while a restarted container's next start, or the
// Pod's emptyDir going with the Pod, removes them anyway. Closed folders are
// never read again: a tree is only ever served from the folder of the
// cache that extracted and checked it.
func (c *Cache) Close() error {
	madeHere.Delete(c.dir)
	parent, base := filepath.Split(c.dir)
	closed := filepath.Join(parent, folderPrefix+closedMark+strings.TrimPrefix(base, folderPrefix))
	if err := os.Rename(c.dir, closed); err != nil {
		// Removed from under it, or a file system that cannot rename:
		// remove it now.
		return os.RemoveAll(c.dir)
	}
	return nil
}

// Tree is an acquired source tree: Dir is a render work folder (the tree
// is in render.SourceDir(Dir)), read-only by contract, valid until
// Release.
type Tree struct {
	Dir     string
	release func()
}

// Release hands the tree back; it may be removed from then on.
func (t *Tree) Release() {
	if t != nil && t.release != nil {
		t.release()
		t.release = nil
	}
}

// RefusedError is an archive pkg/artifact refused (digest, entries,
// limits), as against a download that failed.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Acquire returns the tree of digest, extracting what fetch returns when no
// tree of that digest exists yet. fetch must return the archive of digest;
// it is called at most once at a time per digest.
func (c *Cache) Acquire(ctx context.Context, digest string, fetch func(context.Context) ([]byte, error)) (*Tree, error) {
	if _, err := artifact.ParseDigest(digest); err != nil {
		return nil, &RefusedError{err}
	}
	for {
		c.mu.Lock()
		t, ok := c.trees[digest]
		if !ok {
			t = &tree{digest: digest, ready: make(chan struct{})}
			c.trees[digest] = t
			t.users++
			c.mu.Unlock()
			return c.make(ctx, t, fetch)
		}
		c.use(t)
		c.mu.Unlock()

		select {
		case <-t.ready:
		case <-ctx.Done():
			c.release(t)
			return nil, ctx.Err()
		}
		if t.err == nil {
			return c.handle(t), nil
		}
		c.release(t)
		// Only what the archive's own bytes caused is every waiter's
		// answer: the digest matched, so it is the same for all. The
		// fetcher's download (its URL, its deadline), a digest mismatch
		// (its bytes) and a disk failure are its own: try again, fetching
		// with this caller's fetch if no one else does by then.
		if sharedFailure(t.err) || ctx.Err() != nil {
			return nil, t.err
		}
	}
}

// sharedFailure reports an extraction refused for the archive's content,
// after its digest matched.
func sharedFailure(err error) bool {
	var refused *RefusedError
	return errors.As(err, &refused) && !errors.Is(err, artifact.ErrDigestMismatch)
}

// make downloads and extracts t, which the caller holds one use of.
func (c *Cache) make(ctx context.Context, t *tree, fetch func(context.Context) ([]byte, error)) (tr *Tree, err error) {
	defer func() {
		// A panic must not leave t's waiters waiting for ever.
		if p := recover(); p != nil {
			err = fmt.Errorf("extracting the source artifact failed: %v", p)
			c.fail(t, err)
		}
	}()
	err = c.extract(ctx, t, fetch)
	c.mu.Lock()
	t.err = err
	if err != nil {
		delete(c.trees, t.digest) // the next Acquire tries again
	} else {
		c.bytes += t.bytes
	}
	close(t.ready)
	c.mu.Unlock()
	if err != nil {
		c.release(t)
		return nil, err
	}
	c.evict()
	return c.handle(t), nil
}

// fail ends t with err when make did not get to (a panic).
func (c *Cache) fail(t *tree, err error) {
	c.mu.Lock()
	if isClosed(t.ready) {
		c.mu.Unlock()
		return
	}
	t.err = err
	if c.trees[t.digest] == t {
		delete(c.trees, t.digest)
	}
	close(t.ready)
	dir := t.dir
	c.mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	c.release(t)
}

func (c *Cache) extract(ctx context.Context, t *tree, fetch func(context.Context) ([]byte, error)) error {
	data, err := fetch(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.counter++
	t.dir = filepath.Join(c.dir, fmt.Sprintf("%d-%s", c.counter, strings.TrimPrefix(t.digest, "sha256:")[:12]))
	c.mu.Unlock()
	n, err := artifact.ExtractBytes(data, t.digest, render.SourceDir(t.dir), c.opts.Limits)
	if err != nil {
		_ = os.RemoveAll(t.dir)
		var diskErr *fs.PathError
		if errors.As(err, &diskErr) {
			return err // the disk's failure, not the archive's
		}
		return &RefusedError{err}
	}
	t.bytes = n
	return nil
}

// use counts one more user of t (c.mu held).
func (c *Cache) use(t *tree) {
	t.users++
	if t.idleAt != nil {
		c.idle.Remove(t.idleAt)
		t.idleAt = nil
	}
}

func (c *Cache) handle(t *tree) *Tree {
	var once sync.Once
	return &Tree{Dir: t.dir, release: func() { once.Do(func() { c.release(t) }) }}
}

// release counts one user of t less; an unused, ready tree goes to the
// back of the idle list, and the cache is trimmed to its bounds.
func (c *Cache) release(t *tree) {
	c.mu.Lock()
	t.users--
	kept := c.trees[t.digest] == t
	if t.users == 0 && kept && t.err == nil && isClosed(t.ready) {
		t.idleAt = c.idle.PushBack(t)
	}
	c.mu.Unlock()
	c.evict()
}

// evict removes idle trees, least recently used first, while the cache is
// over its bounds.
func (c *Cache) evict() {
	var gone []string
	c.mu.Lock()
	for (c.bytes > c.opts.MaxBytes || len(c.trees) > c.opts.MaxTrees) && c.idle.Len() > 0 {
		t := c.idle.Remove(c.idle.Front()).(*tree)
		t.idleAt = nil
		delete(c.trees, t.digest)
		c.bytes -= t.bytes
		gone = append(gone, t.dir)
	}
	c.mu.Unlock()
	for _, dir := range gone {
		_ = os.RemoveAll(dir)
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
