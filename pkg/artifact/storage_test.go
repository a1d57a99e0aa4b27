package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"plumb.dev/api/meta"
)

var testRef = Ref{Kind: "GitRepository", Namespace: "apps", Name: "podinfo"}

func newTestStorage(t *testing.T, retention int) *Storage {
	t.Helper()
	s, err := NewStorage(t.TempDir(), "source-controller.plumb-system", retention)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreWritesAtomicallyWithDigest(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	body := "hello artifact"
	a, err := s.Store(context.Background(), testRef, "abc.tar.gz", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Path).To(Equal("gitrepository/apps/podinfo/abc.tar.gz"))
	g.Expect(a.URL).To(Equal("http://source-controller.plumb-system/gitrepository/apps/podinfo/abc.tar.gz"))
	g.Expect(a.Digest).To(Equal(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(body)))))
	g.Expect(*a.Size).To(Equal(int64(len(body))))
	g.Expect(s.Verify(a)).To(Succeed())
	// The mode and time are set and read through the open file before the
	// rename: the stored file is world-readable whatever the umask, and
	// LastUpdateTime is its modification time.
	fi, err := os.Stat(s.LocalPath(a.Path))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o644)))
	g.Expect(a.LastUpdateTime.Time.Equal(fi.ModTime().Truncate(time.Second))).To(BeTrue(), "LastUpdateTime %v, file %v", a.LastUpdateTime, fi.ModTime())
	// In whole seconds, as status keeps it: the descriptor equals its copy
	// read back from the API server (JSON), which the render feed compares
	// it with.
	raw, err := json.Marshal(a)
	g.Expect(err).NotTo(HaveOccurred())
	var back meta.Artifact
	g.Expect(json.Unmarshal(raw, &back)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(*a, back)).To(BeTrue(), "the descriptor and its JSON round trip differ: %v and %v", a.LastUpdateTime, back.LastUpdateTime)

	// No temporary file is left behind, also when the writer fails midway.
	_, err = s.Store(context.Background(), testRef, "broken.tar.gz", io.MultiReader(strings.NewReader("part"), errReader{}))
	g.Expect(err).To(HaveOccurred())
	entries, _ := os.ReadDir(s.LocalPath(testRef.Dir()))
	g.Expect(entries).To(HaveLen(1))
	g.Expect(entries[0].Name()).To(Equal("abc.tar.gz"))
}

// TestARebuiltStorageWritesWithoutSyncing: a storage of files that can be
// made again (render-controller's) renames a write into place without an
// fsync, with the same bytes, digest and atomicity; any other storage
// syncs each write once.
func TestARebuiltStorageWritesWithoutSyncing(t *testing.T) {
	g := NewWithT(t)
	syncs := 0
	defer func(orig func(*os.File) error) { syncFile = orig }(syncFile)
	syncFile = func(f *os.File) error { syncs++; return f.Sync() }

	body := "kind: ConfigMap\n"
	synced := newTestStorage(t, 2)
	a, err := synced.Store(context.Background(), testRef, "a.yaml", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syncs).To(Equal(1), "a source artifact is synced before it is renamed into place")

	rebuilt := newTestStorage(t, 2)
	rebuilt.Rebuilt = true
	b, err := rebuilt.Store(context.Background(), testRef, "a.yaml", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syncs).To(Equal(1), "a render is not synced")
	g.Expect(b.Digest).To(Equal(a.Digest))
	g.Expect(rebuilt.Verify(b)).To(Succeed())

	// Still atomic: a failed write leaves nothing behind, not even its
	// temporary file.
	_, err = rebuilt.Store(context.Background(), testRef, "broken.yaml", io.MultiReader(strings.NewReader("part"), errReader{}))
	g.Expect(err).To(HaveOccurred())
	entries, err := os.ReadDir(rebuilt.LocalPath(testRef.Dir()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1))
	g.Expect(entries[0].Name()).To(Equal("a.yaml"))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestStoreRefusesBadNames(t *testing.T) {
	s := newTestStorage(t, 2)
	for _, tc := range []struct {
		ref  Ref
		file string
	}{
		{testRef, "../x"},
		{testRef, "a/b"},
		{testRef, ".tmp-x"},
		{testRef, ""},
		{Ref{Kind: "gitrepository", Namespace: "..", Name: "x"}, "f"},
		{Ref{Kind: "gitrepository", Namespace: "a/b", Name: "x"}, "f"},
	} {
		if _, err := s.Store(context.Background(), tc.ref, tc.file, strings.NewReader("x")); err == nil {
			t.Errorf("Store(%v, %q) succeeded", tc.ref, tc.file)
		}
	}
}

func TestVerifyNoticesTampering(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	a, err := s.Store(context.Background(), testRef, "x.yaml", strings.NewReader("kind: ConfigMap"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(s.LocalPath(a.Path), []byte("kind: Secret!!!"), 0o644)).To(Succeed())
	g.Expect(errors.Is(s.Verify(a), ErrDigestMismatch)).To(BeTrue())
	g.Expect(os.Remove(s.LocalPath(a.Path))).To(Succeed())
	g.Expect(errors.Is(s.Verify(a), os.ErrNotExist)).To(BeTrue())
	g.Expect(s.Exists(a)).To(BeFalse())
}

func TestGarbageCollectKeepsNewestN(t *testing.T) {
	tests := []struct {
		name      string
		retention int
		keep      string
		want      []string
	}{
		{name: "keep 2", retention: 2, want: []string{"4", "3"}},
		{name: "keep 1", retention: 1, want: []string{"4"}},
		{name: "current is kept even when old", retention: 2, keep: "1", want: []string{"1", "4"}},
		{name: "more than exist", retention: 10, want: []string{"1", "2", "3", "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestStorage(t, tt.retention)
			base := time.Now().Add(-time.Hour)
			for i := 1; i <= 4; i++ {
				a, err := s.Store(context.Background(), testRef, itoa(i), strings.NewReader(itoa(i)))
				g.Expect(err).NotTo(HaveOccurred())
				mt := base.Add(time.Duration(i) * time.Minute)
				g.Expect(os.Chtimes(s.LocalPath(a.Path), mt, mt)).To(Succeed())
			}
			// A stale temporary file from a crash goes too; a fresh one stays.
			stale := filepath.Join(s.LocalPath(testRef.Dir()), ".tmp-stale")
			fresh := filepath.Join(s.LocalPath(testRef.Dir()), ".tmp-fresh")
			g.Expect(os.WriteFile(stale, nil, 0o644)).To(Succeed())
			g.Expect(os.WriteFile(fresh, nil, 0o644)).To(Succeed())
			old := time.Now().Add(-2 * time.Hour)
			g.Expect(os.Chtimes(stale, old, old)).To(Succeed())

			var keep []string
			if tt.keep != "" {
				keep = append(keep, s.RelPath(testRef, tt.keep))
			}
			_, err := s.GarbageCollect(context.Background(), testRef, keep...)
			g.Expect(err).NotTo(HaveOccurred())
			var left []string
			entries, _ := os.ReadDir(s.LocalPath(testRef.Dir()))
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), ".tmp-") {
					left = append(left, e.Name())
				}
			}
			g.Expect(left).To(ConsistOf(tt.want))
			g.Expect(fresh).To(BeAnExistingFile())
			g.Expect(stale).NotTo(BeAnExistingFile())
		})
	}
}

func TestRemoveDeletesTheObjectFolder(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	other := Ref{Kind: "GitRepository", Namespace: "apps", Name: "other"}
	for _, r := range []Ref{testRef, other} {
		_, err := s.Store(context.Background(), r, "a", strings.NewReader("a"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(s.Remove(testRef)).To(Succeed())
	_, err := os.Stat(s.LocalPath(testRef.Dir()))
	g.Expect(err).To(MatchError(os.ErrNotExist), "the folder of the removed object is gone")
	g.Expect(s.LocalPath(other.Dir())).To(BeADirectory())
	g.Expect(s.Remove(testRef)).To(Succeed(), "removing twice is fine")
}

func TestPackIntoStorageSameTreeSameDigest(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.yaml": "a", "b/c.yaml": "c"})
	a1, err := s.Pack(context.Background(), testRef, "commit1.tar.gz", dir, PackOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(10 * time.Millisecond)
	g.Expect(os.Chtimes(filepath.Join(dir, "a.yaml"), time.Now(), time.Now())).To(Succeed())
	a2, err := s.Pack(context.Background(), testRef, "commit2.tar.gz", dir, PackOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a2.Digest).To(Equal(a1.Digest))
	g.Expect(a2.Path).NotTo(Equal(a1.Path))
}

func TestHandler(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	body := strings.Repeat("0123456789", 100)
	a, err := s.Store(context.Background(), testRef, "x.tar.gz", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(s.LocalPath(testRef.Dir()), ".tmp-123"), []byte("partial"), 0o644)).To(Succeed())
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	do := func(method, path string, hdr map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, got := do(http.MethodGet, "/"+a.Path, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(got).To(Equal(body))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/gzip"))

	resp, got = do(http.MethodHead, "/"+a.Path, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.ContentLength).To(Equal(int64(len(body))))
	g.Expect(got).To(BeEmpty())

	resp, got = do(http.MethodGet, "/"+a.Path, map[string]string{"Range": "bytes=10-19"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusPartialContent))
	g.Expect(got).To(Equal("0123456789"))
	g.Expect(resp.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes 10-19/%d", len(body))))

	for _, p := range []string{"/", "/gitrepository/", "/" + testRef.Dir(), "/" + testRef.Dir() + "/.tmp-123", "/../../etc/passwd", "/gitrepository/apps/podinfo/missing"} {
		resp, _ = do(http.MethodGet, p, nil)
		g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound), p)
	}
	resp, _ = do(http.MethodPost, "/"+a.Path, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
}

func TestServerStartsAndStops(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	a, err := s.Store(context.Background(), testRef, "x", strings.NewReader("x"))
	g.Expect(err).NotTo(HaveOccurred())
	srv := NewServer("127.0.0.1:0", s)
	addr, err := srv.Listen()
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	resp, err := http.Get("http://" + addr.String() + "/" + a.Path)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	cancel()
	g.Eventually(done, 15*time.Second).Should(Receive(BeNil()))
}

// List names the objects of one kind that have a folder, skipping stray
// files, links and other kinds, and stops at its limit of entries read.
func TestListNamesTheFoldersOfOneKindWithinItsLimit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newTestStorage(t, 2)
	refs := []Ref{
		{Kind: "Kustomization", Namespace: "apps", Name: "web"},
		{Kind: "Kustomization", Namespace: "apps", Name: "db"},
		{Kind: "Kustomization", Namespace: "infra", Name: "dns"},
	}
	for _, r := range append(refs, Ref{Kind: "HelmRelease", Namespace: "apps", Name: "web"}) {
		_, err := s.Store(ctx, r, "a.yaml", strings.NewReader("x"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	kdir := s.LocalPath("kustomization")
	g.Expect(os.WriteFile(filepath.Join(kdir, "stray"), []byte("x"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(kdir, "apps", "stray"), []byte("x"), 0o644)).To(Succeed())
	g.Expect(os.Symlink(t.TempDir(), filepath.Join(kdir, "apps", "link"))).To(Succeed())
	g.Expect(os.Mkdir(filepath.Join(kdir, "apps", tmpPrefix+"x"), 0o755)).To(Succeed())

	got, err := s.List(ctx, "Kustomization", 100)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(ConsistOf(refs))

	// 2 namespaces and a file at the first level, 5 and 1 entries below:
	// a limit of 4 reads the first level and part of one namespace.
	got, err = s.List(ctx, "Kustomization", 4)
	g.Expect(err).To(MatchError(ErrListTruncated))
	g.Expect(len(got)).To(BeNumerically("<", len(refs)))
	for _, r := range got {
		g.Expect(refs).To(ContainElement(r))
	}

	got, err = s.List(ctx, "OCIRepository", 100)
	g.Expect(err).NotTo(HaveOccurred(), "a kind without a folder lists nothing")
	g.Expect(got).To(BeEmpty())
	_, err = s.List(ctx, "../etc", 100)
	g.Expect(err).To(HaveOccurred())
}
