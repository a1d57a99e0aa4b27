package git

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/testgit"
)

type fixture struct {
	srv                *testgit.Server
	repo               *testgit.Repo
	c1, c2, c3, side   string
	creds              map[string][]byte
	identity           []byte
	knownHosts         string
	wrongHostKnownHost string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	g := NewWithT(t)
	srv, err := testgit.NewServer(testgit.Options{Username: "git", Password: "pw"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { srv.Close() })
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	f := &fixture{srv: srv, repo: repo, creds: map[string][]byte{UsernameKey: []byte("git"), PasswordKey: []byte("pw")}}
	f.c1, err = repo.Commit("master", "one", testgit.Files{"a.yaml": "1"})
	g.Expect(err).NotTo(HaveOccurred())
	f.c2, err = repo.Commit("master", "two", testgit.Files{"a.yaml": "2"})
	g.Expect(err).NotTo(HaveOccurred())
	f.side, err = repo.Commit("side", "side", testgit.Files{"side.yaml": "s"})
	g.Expect(err).NotTo(HaveOccurred())
	f.c3, err = repo.Commit("master", "three", testgit.Files{"a.yaml": "3"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Tag("v1.0.0", f.c1, "release 1.0.0")).To(Succeed())
	g.Expect(repo.Tag("v1.1.0", f.c2, "")).To(Succeed())
	g.Expect(repo.Tag("v2.0.0", f.c3, "release 2")).To(Succeed())
	g.Expect(repo.Tag("not-a-version", f.c3, "")).To(Succeed())
	g.Expect(repo.SetRef("refs/pull/7/head", f.side)).To(Succeed())

	identity, clientKey, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	f.identity = identity
	f.knownHosts, err = srv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{clientKey.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())
	_, other, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	f.wrongHostKnownHost = knownhosts.Line([]string{knownhosts.Normalize(srv.SSHAddress())}, other.PublicKey())
	return f
}

func fetch(t *testing.T, url string, secret map[string][]byte, ref *sourcev1.GitRepositoryRef) (Target, string, error) {
	t.Helper()
	return fetchLimited(t, url, secret, ref, 0)
}

// fetchLimited is fetch with a disk limit (0: the default).
func fetchLimited(t *testing.T, url string, secret map[string][]byte, ref *sourcev1.GitRepositoryRef, maxSize int64) (Target, string, error) {
	return fetchWith(t, url, secret, ref, CheckoutOptions{MaxSize: maxSize})
}

// fetchWith lists, resolves and checks out ref with opts.
func fetchWith(t *testing.T, url string, secret map[string][]byte, ref *sourcev1.GitRepositoryRef, opts CheckoutOptions) (Target, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tmp := t.TempDir()
	auth, err := AuthFromSecret(url, secret, "ns/creds", tmp)
	if err != nil {
		return Target{}, "", err
	}
	// The test servers listen on 127.0.0.1.
	auth.Addresses = netguard.Policy{AllowLoopback: true}
	var refs Refs
	if ref == nil || ref.Commit == "" || ref.Branch != "" {
		if refs, err = ListRefs(ctx, url, auth); err != nil {
			return Target{}, "", err
		}
	}
	target, err := Resolve(ref, refs)
	if err != nil {
		return Target{}, "", err
	}
	dir := filepath.Join(tmp, "checkout")
	target, err = Checkout(ctx, url, auth, target, dir, opts)
	return target, dir, err
}

func TestFetchRefs(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name     string
		ref      *sourcev1.GitRepositoryRef
		revision string
		content  string
	}{
		{name: "default branch", ref: nil, revision: "master@sha1:" + f.c3, content: "3"},
		{name: "branch", ref: &sourcev1.GitRepositoryRef{Branch: "side"}, revision: "side@sha1:" + f.side, content: "2"},
		{name: "annotated tag", ref: &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, revision: "v1.0.0@sha1:" + f.c1, content: "1"},
		{name: "lightweight tag", ref: &sourcev1.GitRepositoryRef{Tag: "v1.1.0"}, revision: "v1.1.0@sha1:" + f.c2, content: "2"},
		{name: "semver highest", ref: &sourcev1.GitRepositoryRef{SemVer: ">=1.0.0"}, revision: "v2.0.0@sha1:" + f.c3, content: "3"},
		{name: "semver range", ref: &sourcev1.GitRepositoryRef{SemVer: "~1"}, revision: "v1.1.0@sha1:" + f.c2, content: "2"},
		{name: "name", ref: &sourcev1.GitRepositoryRef{Name: "refs/pull/7/head"}, revision: "refs/pull/7/head@sha1:" + f.side, content: "2"},
		{name: "commit", ref: &sourcev1.GitRepositoryRef{Commit: f.c2}, revision: "sha1:" + f.c2, content: "2"},
		{name: "commit on branch", ref: &sourcev1.GitRepositoryRef{Branch: "master", Commit: f.c1}, revision: "master@sha1:" + f.c1, content: "1"},
		{name: "older commit on branch", ref: &sourcev1.GitRepositoryRef{Branch: "side", Commit: f.c2}, revision: "side@sha1:" + f.c2, content: "2"},
		{name: "commit beats tag", ref: &sourcev1.GitRepositoryRef{Tag: "v2.0.0", Commit: f.c1}, revision: "sha1:" + f.c1, content: "1"},
		{name: "name beats branch, tag and semver", ref: &sourcev1.GitRepositoryRef{Branch: "master", Tag: "v2.0.0", SemVer: "~1", Name: "refs/pull/7/head"}, revision: "refs/pull/7/head@sha1:" + f.side, content: "2"},
		{name: "name of an annotated tag", ref: &sourcev1.GitRepositoryRef{Name: "refs/tags/v1.0.0"}, revision: "refs/tags/v1.0.0@sha1:" + f.c1, content: "1"},
		{name: "name of a branch", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/side"}, revision: "refs/heads/side@sha1:" + f.side, content: "2"},
		{name: "commit beats name", ref: &sourcev1.GitRepositoryRef{Name: "refs/pull/7/head", Commit: f.c2}, revision: "sha1:" + f.c2, content: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			target, dir, err := fetch(t, f.repo.URL(), f.creds, tt.ref)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(target.Revision()).To(Equal(tt.revision))
			b, err := os.ReadFile(filepath.Join(dir, "a.yaml"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(b)).To(Equal(tt.content))
		})
	}
}

func TestFetchErrors(t *testing.T) {
	f := newFixture(t)
	closed := closedPort(t)
	tests := []struct {
		name    string
		url     string
		secret  map[string][]byte
		ref     *sourcev1.GitRepositoryRef
		kind    Kind
		message string
	}{
		{name: "wrong password", secret: map[string][]byte{UsernameKey: []byte("git"), PasswordKey: []byte("nope")}, kind: AuthFailed, message: "credentials were refused"},
		{name: "no credentials", kind: AuthFailed, message: "credentials were refused"},
		{name: "missing branch", ref: &sourcev1.GitRepositoryRef{Branch: "nope"}, kind: NotFound, message: `branch "nope" not found`},
		{name: "missing tag", ref: &sourcev1.GitRepositoryRef{Tag: "v9"}, kind: NotFound, message: `tag "v9" not found`},
		{name: "no semver match", ref: &sourcev1.GitRepositoryRef{SemVer: ">=5"}, kind: NotFound, message: "no tag matching semver range"},
		{name: "invalid semver", ref: &sourcev1.GitRepositoryRef{SemVer: "not a range"}, kind: InvalidSpec, message: "is not a valid semver range"},
		{name: "commit not on branch", ref: &sourcev1.GitRepositoryRef{Branch: "side", Commit: f.c3}, kind: NotFound, message: "not found"},
		{name: "unknown commit", ref: &sourcev1.GitRepositoryRef{Commit: "0123456789012345678901234567890123456789"}, kind: NotFound, message: "commit 0123456789012345678901234567890123456789 not found"},
		{name: "unreachable host", url: "http://" + closed + "/app.git", kind: Failed, message: "connection refused"},
		{name: "missing repository", url: f.srv.HTTPAddress() + "/nothing.git", kind: NotFound, message: "repository does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			url := tt.url
			if url == "" {
				url = f.repo.URL()
			}
			secret := tt.secret
			if secret == nil && tt.name != "no credentials" {
				secret = f.creds
			}
			_, _, err := fetch(t, url, secret, tt.ref)
			g.Expect(err).To(HaveOccurred())
			g.Expect(KindOf(err)).To(Equal(tt.kind), err.Error())
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
		})
	}
}

func TestFetchOverSSHChecksTheHostKey(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		secret     map[string][]byte
		wantErr    string
		wantKind   Kind
		wantCommit string
	}{
		{name: "right host key", secret: map[string][]byte{IdentityKey: f.identity, KnownHostsKey: []byte(f.knownHosts)}, wantCommit: f.c3},
		{name: "wrong host key", secret: map[string][]byte{IdentityKey: f.identity, KnownHostsKey: []byte(f.wrongHostKnownHost)}, wantErr: "host key", wantKind: AuthFailed},
		{name: "no known_hosts", secret: map[string][]byte{IdentityKey: f.identity}, wantErr: "unknown host is refused", wantKind: AuthFailed},
		{name: "host not listed", secret: map[string][]byte{IdentityKey: f.identity, KnownHostsKey: []byte("[example.org]:22 " + f.knownHosts[len("["+f.srv.SSHAddress())+1:])}, wantErr: "host key", wantKind: AuthFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			target, _, err := fetch(t, f.repo.SSHURL(), tt.secret, nil)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(KindOf(err)).To(Equal(tt.wantKind))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(target.Commit).To(Equal(tt.wantCommit))
		})
	}
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestCheckoutRefusesARepositoryOverTheSizeLimit(t *testing.T) {
	f := newFixture(t)
	const limit = 128 << 10
	noise := make([]byte, 2*limit)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	// Random bytes do not compress: the fetched objects pass the limit.
	// Zeros compress to almost nothing: the fetch fits, the checkout does
	// not.
	big, err := f.srv.CreateRepo("big-objects")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	bigCommit, err := big.Commit("master", "noise", testgit.Files{"noise.bin": string(noise)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	inflating, err := f.srv.CreateRepo("big-tree")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	inflatingCommit, err := inflating.Commit("master", "zeros", testgit.Files{"zeros.bin": strings.Repeat("\x00", 2*limit)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	sshCreds := map[string][]byte{IdentityKey: f.identity, KnownHostsKey: []byte(f.knownHosts)}

	tests := []struct {
		name   string
		url    string
		secret map[string][]byte
		commit string
		// fetched: the objects fit and the checkout passed the limit.
		fetched bool
	}{
		{name: "objects over HTTP", url: big.URL(), secret: f.creds, commit: bigCommit},
		{name: "objects over SSH", url: big.SSHURL(), secret: sshCreds, commit: bigCommit},
		{name: "checked-out tree", url: inflating.URL(), secret: f.creds, commit: inflatingCommit, fetched: true},
		{name: "checked-out tree over SSH", url: inflating.SSHURL(), secret: sshCreds, commit: inflatingCommit, fetched: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, dir, err := fetchLimited(t, tt.url, tt.secret, nil, limit)
			g.Expect(err).To(HaveOccurred())
			g.Expect(KindOf(err)).To(Equal(TooLarge), err.Error())
			g.Expect(err.Error()).To(Equal(fmt.Sprintf(
				"fetching and checking out master@sha1:%s passes the limit of %d bytes on disk per repository (--max-repository-size)",
				tt.commit, limit)))
			// The limit held while writing: the disk never held more.
			g.Expect(diskUsage(t, dir)).To(BeNumerically("<=", limit))
			packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
			g.Expect(err).NotTo(HaveOccurred())
			if tt.fetched {
				g.Expect(packs).To(HaveLen(1), "the fetch completed")
			} else {
				g.Expect(packs).To(BeEmpty(), "the fetch was stopped")
			}

			// The same repository fits under a higher limit.
			_, dir, err = fetchLimited(t, tt.url, tt.secret, nil, 8*limit)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(diskUsage(t, dir)).To(BeNumerically(">", limit))
		})
	}
}

// diskUsage sums the sizes of the files under dir.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

func TestSparseCheckoutWritesOnlyTheDirectories(t *testing.T) {
	g := NewWithT(t)
	srv, err := testgit.NewServer(testgit.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { srv.Close() })
	repo, err := srv.CreateRepo("mono")
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.Commit("master", "tree", testgit.Files{
		"README.md":             "root",
		"app/cm.yaml":           "app",
		"app/nested/deep.yaml":  "deep",
		"apps/other.yaml":       "a prefix of app, not app",
		"app.yaml":              "a file beside app",
		"infra/prod/cm.yaml":    "prod",
		"infra/staging/cm.yaml": "staging",
		"infra/prod.yaml":       "beside prod",
	})
	g.Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name  string
		dirs  []string
		files []string
		err   string
	}{
		{name: "none", files: []string{"README.md", "app.yaml", "app/cm.yaml", "app/nested/deep.yaml", "apps/other.yaml", "infra/prod.yaml", "infra/prod/cm.yaml", "infra/staging/cm.yaml"}},
		{name: "one", dirs: []string{"app"}, files: []string{"app/cm.yaml", "app/nested/deep.yaml"}},
		{name: "dot-slash-and-nested", dirs: []string{"./app/nested", "infra/prod/"}, files: []string{"app/nested/deep.yaml", "infra/prod/cm.yaml"}},
		{name: "root", dirs: []string{"./"}, files: []string{"README.md", "app.yaml", "app/cm.yaml", "app/nested/deep.yaml", "apps/other.yaml", "infra/prod.yaml", "infra/prod/cm.yaml", "infra/staging/cm.yaml"}},
		{name: "missing", dirs: []string{"app", "gone"}, err: `spec.sparseCheckout directory "gone" in commit ` + commit + ` not found`},
		{name: "a-file", dirs: []string{"app.yaml"}, err: `spec.sparseCheckout directory "app.yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			target, dir, err := fetchWith(t, repo.URL(), nil, nil, CheckoutOptions{Directories: tt.dirs})
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				g.Expect(KindOf(err)).To(Equal(NotFound))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(target.Commit).To(Equal(commit))
			g.Expect(worktreeFiles(t, dir)).To(Equal(tt.files))
		})
	}
}

// worktreeFiles lists the regular files under dir outside .git, sorted.
func worktreeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestSparseDirsOutsideTheRepositoryAreRefused: a sparse folder that the
// CRD would refuse (absolute, or above the root) is refused again before
// anything on the disk is looked at.
func TestSparseDirsOutsideTheRepositoryAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"../", "../../etc/", "/etc/"} {
		err := checkSparseDirs(dir, "abc", []string{d})
		if err == nil || !strings.Contains(err.Error(), "is not inside the repository") {
			t.Errorf("%q: got %v, want a refusal", d, err)
		}
	}
	if err := checkSparseDirs(dir, "abc", []string{"missing/"}); err == nil || strings.Contains(err.Error(), "is not inside") {
		t.Errorf("a folder inside but missing: got %v, want not found", err)
	}
}
