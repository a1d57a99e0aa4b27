package sourcetree

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testtar"
)

// archive packs files (name → content) as a source artifact and returns it
// with its digest.
func archive(t *testing.T, files map[string]string) ([]byte, string) {
	t.Helper()
	data := testtar.TarGz(t, testtar.Files(files)...)
	return data, fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}

// counted returns a fetch of data that counts its calls.
func counted(data []byte, calls *atomic.Int32) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		calls.Add(1)
		return data, nil
	}
}

func newCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	opts.Dir = t.TempDir()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestOneExtractionServesEveryConcurrentUser(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t, Options{})
	data, digest := archive(t, map[string]string{"apps/a/cm.yaml": "kind: ConfigMap\n"})
	var calls atomic.Int32
	release := make(chan struct{})
	slow := func(ctx context.Context) ([]byte, error) {
		<-release // every user is waiting before the first download ends
		return counted(data, &calls)(ctx)
	}

	const users = 16
	trees := make([]*Tree, users)
	errs := make([]error, users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			trees[i], errs[i] = c.Acquire(context.Background(), digest, slow)
		}()
	}
	g.Eventually(func() int { return c.Stats().InUse }).Should(Equal(1))
	close(release)
	wg.Wait()

	g.Expect(calls.Load()).To(Equal(int32(1)), "one download for all")
	for i := range users {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(trees[i].Dir).To(Equal(trees[0].Dir))
	}
	b, err := os.ReadFile(filepath.Join(render.SourceDir(trees[0].Dir), "apps", "a", "cm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("kind: ConfigMap\n"))
	g.Expect(c.Stats()).To(Equal(Stats{Trees: 1, InUse: 1, Bytes: 3 * artifact.BlockBytes}), "apps/, apps/a/ and the file")

	for _, tr := range trees {
		tr.Release()
	}
	again, err := c.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	defer again.Release()
	g.Expect(calls.Load()).To(Equal(int32(1)), "a kept tree is not downloaded again")
}

func TestARefusedArchiveIsRefusedToAllAndNotRemembered(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t, Options{})
	_, digest := archive(t, map[string]string{"a.yaml": "x"})
	tampered, _ := archive(t, map[string]string{"a.yaml": "y"})
	var calls atomic.Int32

	_, err := c.Acquire(context.Background(), digest, counted(tampered, &calls))
	var refused *RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "got %v", err)
	g.Expect(err).To(MatchError(artifact.ErrDigestMismatch))
	_, err = c.Acquire(context.Background(), digest, counted(tampered, &calls))
	g.Expect(err).To(MatchError(artifact.ErrDigestMismatch))
	g.Expect(calls.Load()).To(Equal(int32(2)), "a failure is tried again")
	g.Expect(c.Stats()).To(Equal(Stats{}))
	entries, err := os.ReadDir(c.dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "a refused tree leaves nothing on disk")

	_, err = c.Acquire(context.Background(), "md5:abc", counted(tampered, &calls))
	g.Expect(errors.As(err, &refused)).To(BeTrue())
	g.Expect(calls.Load()).To(Equal(int32(2)), "a malformed digest is refused before any download")

	boom := errors.New("connection refused")
	_, err = c.Acquire(context.Background(), digest, func(context.Context) ([]byte, error) { return nil, boom })
	g.Expect(err).To(MatchError(boom))
	g.Expect(errors.As(err, &refused)).To(BeFalse(), "a failed download is not a refusal")
}

func TestIdleTreesGoLeastRecentlyUsedFirstAndTreesInUseStay(t *testing.T) {
	g := NewWithT(t)
	// Each tree is one block: the cache keeps two.
	c := newCache(t, Options{MaxBytes: 2.5 * artifact.BlockBytes})
	var calls atomic.Int32
	acquire := func(name string) *Tree {
		data, digest := archive(t, map[string]string{name + ".yaml": "0123456789"})
		tr, err := c.Acquire(context.Background(), digest, counted(data, &calls))
		g.Expect(err).NotTo(HaveOccurred())
		return tr
	}
	a := acquire("a")
	b := acquire("b")
	held := acquire("held")
	g.Expect(c.Stats()).To(Equal(Stats{Trees: 3, InUse: 3, Bytes: 3 * artifact.BlockBytes}), "trees in use are kept over the bound")

	a.Release() // a goes first, b after it
	g.Expect(a.Dir).NotTo(BeADirectory())
	b.Release()
	g.Expect(b.Dir).To(BeADirectory())
	g.Expect(c.Stats()).To(Equal(Stats{Trees: 2, InUse: 1, Bytes: 2 * artifact.BlockBytes}))

	b2 := acquire("b") // b is used again: not downloaded, no longer idle
	g.Expect(b2.Dir).To(Equal(b.Dir))
	g.Expect(calls.Load()).To(Equal(int32(3)))
	c2 := acquire("c")
	g.Expect(held.Dir).To(BeADirectory(), "a tree in use is never removed")
	g.Expect(c.Stats()).To(Equal(Stats{Trees: 3, InUse: 3, Bytes: 3 * artifact.BlockBytes}))
	for _, tr := range []*Tree{b2, c2, held} {
		tr.Release()
		tr.Release() // a second release is a no-op
	}
	g.Expect(c.Stats()).To(Equal(Stats{Trees: 2, InUse: 0, Bytes: 2 * artifact.BlockBytes}))
	g.Expect(b.Dir).NotTo(BeADirectory(), "b was the least recently used")

	one := newCache(t, Options{MaxTrees: 1})
	data, digest := archive(t, map[string]string{"x": ""})
	tr, err := one.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	tr.Release()
	data, digest = archive(t, map[string]string{"y": ""})
	tr, err = one.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	tr.Release()
	g.Expect(one.Stats().Trees).To(Equal(1), "empty trees are bounded by count")
}

// firstAndWaiter starts an Acquire of digest by a first user with first
// (which blocks until the test lets it go) and, once first runs, one by a
// second user with second that waits on the first's download. It returns
// both users' results.
func firstAndWaiter(t *testing.T, c *Cache, firstCtx context.Context, digest string,
	first, second func(context.Context) ([]byte, error)) (firstErr, secondErr chan error) {
	t.Helper()
	started := make(chan struct{})
	firstErr, secondErr = make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := c.Acquire(firstCtx, digest, func(ctx context.Context) ([]byte, error) {
			close(started)
			return first(ctx)
		})
		firstErr <- err
	}()
	<-started
	go func() {
		tr, err := c.Acquire(context.Background(), digest, second)
		if err == nil {
			defer tr.Release()
			_, err = os.Stat(render.SourceDir(tr.Dir))
		}
		secondErr <- err
	}()
	users := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t := c.trees[digest]; t != nil {
			return t.users
		}
		return 0
	}
	NewWithT(t).Eventually(users).Should(Equal(2), "the second user waits on the first's download")
	return firstErr, secondErr
}

func TestAWaiterFetchesItselfWhenTheFetcherGivesUp(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t, Options{})
	data, digest := archive(t, map[string]string{"a.yaml": "x"})
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	var calls atomic.Int32
	firstErr, second := firstAndWaiter(t, c, firstCtx, digest, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, counted(data, &calls))
	cancelFirst()
	g.Expect(<-firstErr).To(MatchError(context.Canceled))
	g.Expect(<-second).To(Succeed())
	g.Expect(calls.Load()).To(Equal(int32(1)))
}

func TestNewRemovesTheFoldersOfProcessesThatAreGone(t *testing.T) {
	g := NewWithT(t)
	parent := t.TempDir()
	done := exec.Command("true")
	g.Expect(done.Run()).To(Succeed())
	gone := filepath.Join(parent, folderPrefix+strconv.Itoa(done.Process.Pid)+"-123")
	alive := filepath.Join(parent, folderPrefix+strconv.Itoa(os.Getppid())+"-456")
	other := filepath.Join(parent, "something-else")
	for _, d := range []string{gone, alive, other} {
		g.Expect(os.MkdirAll(filepath.Join(d, "tree"), 0o700)).To(Succeed())
	}
	c, err := New(Options{Dir: parent})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(gone).ShouldNot(BeADirectory())
	g.Expect(alive).To(BeADirectory(), "a running process's trees are its own")
	second, err := New(Options{Dir: parent})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.dir).To(BeADirectory(), "a second cache of this process leaves the first's folder alone")
	g.Expect(second.Close()).To(Succeed())
	g.Expect(other).To(BeADirectory())
	g.Expect(c.Close()).To(Succeed())
	g.Expect(c.dir).NotTo(BeADirectory())
}

// A stop renames the trees away in one step and the next start removes
// them: with thousands of files, removing them was most of
// render-controller's stop.
func TestAClosedCachesTreesAreRemovedByTheNextStart(t *testing.T) {
	g := NewWithT(t)
	parent := t.TempDir()
	c, err := New(Options{Dir: parent})
	g.Expect(err).NotTo(HaveOccurred())
	data, digest := archive(t, map[string]string{"apps/a/kustomization.yaml": "resources: [cm.yaml]\n", "apps/a/cm.yaml": "kind: ConfigMap\n"})
	var calls atomic.Int32
	tr, err := c.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	tr.Release()
	treeDir := tr.Dir

	g.Expect(c.Close()).To(Succeed())
	g.Expect(c.dir).NotTo(BeADirectory(), "the cache's folder is gone under its name")
	closed, err := filepath.Glob(filepath.Join(parent, folderPrefix+closedMark+"*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(closed).To(HaveLen(1))
	rel, err := filepath.Rel(c.dir, treeDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(closed[0], rel, render.SourceDir(""), "apps/a/cm.yaml")).To(BeARegularFile(), "the stop did not walk the trees")

	// The next start, in this process (the same pid, which a restarted
	// container also gets): the closed folder goes, its own stays and
	// serves.
	next, err := New(Options{Dir: parent})
	g.Expect(err).NotTo(HaveOccurred())
	defer next.Close()
	g.Eventually(closed[0]).ShouldNot(BeADirectory())
	tr, err = next.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	defer tr.Release()
	g.Expect(calls.Load()).To(Equal(int32(2)), "a closed cache's tree is never served again")
	g.Expect(filepath.Join(render.SourceDir(tr.Dir), "apps/a/cm.yaml")).To(BeARegularFile())
	g.Expect(next.dir).To(BeADirectory())
}

// Only the archive's own refusal is every waiter's: a digest mismatch (the
// first caller's download, perhaps from a URL another tenant wrote) sends
// each waiter to fetch with its own fetch.
func TestAWaiterFetchesItselfWhenTheFirstDownloadWasWrong(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t, Options{})
	data, digest := archive(t, map[string]string{"a.yaml": "x"})
	wrong, _ := archive(t, map[string]string{"a.yaml": "other"})
	finish := make(chan struct{})
	var calls atomic.Int32
	firstErr, second := firstAndWaiter(t, c, context.Background(), digest, func(context.Context) ([]byte, error) {
		<-finish
		return wrong, nil
	}, counted(data, &calls))
	close(finish)
	g.Expect(<-firstErr).To(MatchError(artifact.ErrDigestMismatch))
	g.Expect(<-second).To(Succeed(), "the waiter's own download is right")
	g.Expect(calls.Load()).To(Equal(int32(1)))

	// A refusal of the content is the same for everyone, and not retried
	// by the waiters.
	slip, slipDigest := archive(t, map[string]string{"../escape.yaml": "x"})
	_, err := c.Acquire(context.Background(), slipDigest, counted(slip, &calls))
	g.Expect(err).To(MatchError(artifact.ErrUnsafePath))
	g.Expect(sharedFailure(err)).To(BeTrue())
}

func TestAPanickingFetchDoesNotWedgeItsDigest(t *testing.T) {
	g := NewWithT(t)
	c := newCache(t, Options{})
	data, digest := archive(t, map[string]string{"a.yaml": "x"})
	_, err := c.Acquire(context.Background(), digest, func(context.Context) ([]byte, error) { panic("boom") })
	g.Expect(err).To(MatchError(ContainSubstring("boom")))
	var calls atomic.Int32
	tr, err := c.Acquire(context.Background(), digest, counted(data, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	tr.Release()
	g.Expect(calls.Load()).To(Equal(int32(1)))
}
