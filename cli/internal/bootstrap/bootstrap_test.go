package bootstrap

import (
	"context"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"plumb.dev/cli/internal/install"
	"plumb.dev/pkg/testgit"
)

func gitServer(t *testing.T) *testgit.Server {
	t.Helper()
	srv, err := testgit.NewServer(testgit.Options{Username: "git", Password: "s3cret", Push: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func options(url string) Options {
	return Options{
		URL:     url,
		Branch:  "main",
		Path:    "clusters/local",
		Auth:    Auth{Username: "git", Password: "s3cret", AllowInsecureHTTP: true},
		Author:  Author{Name: "Ops", Email: "ops@example.com"},
		Install: install.DefaultOptions("v0.9.0"),
	}
}

// read returns the file at branch's head, "" when it is not there.
func read(t *testing.T, url, branch, name string) string {
	t.Helper()
	repo, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: url, Auth: &githttp.BasicAuth{Username: "git", Password: "s3cret"},
		ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func decode(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func TestPushWritesTheManifestsIntoAnEmptyRepositoryOnce(t *testing.T) {
	g := NewWithT(t)
	srv := gitServer(t)
	repo, err := srv.CreateRepo("fleet")
	g.Expect(err).NotTo(HaveOccurred())
	o := options(repo.URL())

	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(3))
	first, err := Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Changed).To(BeTrue())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(first.Hash))
	g.Expect(srv.Pushes("fleet")).To(Equal(1))

	sync := decode(t, read(t, repo.URL(), "main", "clusters/local/plumb-system/plumb-sync.yaml"))
	g.Expect(sync).To(HaveLen(2))
	gitRepo, ks := sync[0], sync[1]
	g.Expect(gitRepo.GetKind()).To(Equal("GitRepository"))
	g.Expect(gitRepo.Object["spec"]).To(And(
		HaveKeyWithValue("url", repo.URL()),
		HaveKeyWithValue("ref", map[string]any{"branch": "main"}),
		HaveKeyWithValue("secretRef", map[string]any{"name": Name}),
		HaveKeyWithValue("interval", "1m0s"),
	))
	g.Expect(ks.GetKind()).To(Equal("Kustomization"))
	g.Expect(ks.GetNamespace()).To(Equal(install.Namespace))
	g.Expect(ks.Object["spec"]).To(And(
		HaveKeyWithValue("path", "clusters/local"),
		HaveKeyWithValue("prune", true),
		HaveKeyWithValue("serviceAccountName", "sync-controller"),
		HaveKeyWithValue("sourceRef", map[string]any{"kind": "GitRepository", "name": Name}),
	))
	components := read(t, repo.URL(), "main", "clusters/local/plumb-system/plumb-components.yaml")
	g.Expect(components).To(ContainSubstring("image: ghcr.io/plumb-dev/sync-controller:v0.9.0"))
	g.Expect(read(t, repo.URL(), "main", "clusters/local/plumb-system/kustomization.yaml")).To(ContainSubstring("plumb-components.yaml"))

	// The same options again: nothing committed, nothing pushed.
	again, err := Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(Commit{Hash: first.Hash}))
	g.Expect(srv.Pushes("fleet")).To(Equal(1))
}

func TestPrivateNetworksArePatchedInByTheRepositorysKustomization(t *testing.T) {
	g := NewWithT(t)
	o := options("http://10.244.0.1:8080/fleet.git")
	o.Install.AllowedPrivateNetworks = []string{"10.244.0.1/32"}
	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	const arg = "--allowed-private-networks=10.244.0.1/32"
	g.Expect(string(files["clusters/local/plumb-system/plumb-components.yaml"])).NotTo(ContainSubstring("--allowed-private-networks="))
	g.Expect(string(files["clusters/local/plumb-system/kustomization.yaml"])).To(ContainSubstring(arg))

	// Built as render-controller builds the folder, the Deployments that
	// fetch carry the flag, the others do not.
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		g.Expect(fs.MkdirAll(path.Dir("/" + name))).To(Succeed())
		g.Expect(fs.WriteFile("/"+name, data)).To(Succeed())
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/clusters/local/plumb-system")
	g.Expect(err).NotTo(HaveOccurred())
	seen := map[string][]string{}
	for _, r := range res.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		args, err := r.GetSlice("spec.template.spec.containers[0].args")
		g.Expect(err).NotTo(HaveOccurred())
		for _, a := range args {
			seen[r.GetName()] = append(seen[r.GetName()], a.(string))
		}
	}
	g.Expect(seen).To(HaveKey("sync-controller"))
	for name, args := range seen {
		if name == "source-controller" || name == "image-controller" || name == "sync-controller" {
			g.Expect(args).To(ContainElement(arg), name)
		} else {
			g.Expect(args).NotTo(ContainElement(arg), name)
		}
	}

	// Without the option the kustomization is as before: no patch.
	plain, err := Files(options(o.URL))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain["clusters/local/plumb-system/kustomization.yaml"])).NotTo(ContainSubstring("patches"))
}

func TestPushUpgradesAndKeepsTheRestOfTheRepository(t *testing.T) {
	g := NewWithT(t)
	srv := gitServer(t)
	repo, err := srv.CreateRepo("fleet")
	g.Expect(err).NotTo(HaveOccurred())
	app := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\n"
	_, err = repo.Commit("main", "the cluster's apps", testgit.Files{"clusters/local/apps/app.yaml": app, "README.md": "fleet\n"})
	g.Expect(err).NotTo(HaveOccurred())

	o := options(repo.URL())
	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())

	o.Install.Version = "v0.10.0"
	files, err = Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	up, err := Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(up.Changed).To(BeTrue())
	g.Expect(srv.Pushes("fleet")).To(Equal(2))
	components := read(t, repo.URL(), "main", "clusters/local/plumb-system/plumb-components.yaml")
	g.Expect(components).To(ContainSubstring("sync-controller:v0.10.0"))
	g.Expect(components).NotTo(ContainSubstring("sync-controller:v0.9.0"))
	g.Expect(read(t, repo.URL(), "main", "clusters/local/apps/app.yaml")).To(Equal(app))
	g.Expect(read(t, repo.URL(), "main", "README.md")).To(Equal("fleet\n"))
}

func TestPushCreatesAMissingBranchFromTheDefaultOne(t *testing.T) {
	g := NewWithT(t)
	srv := gitServer(t)
	repo, err := srv.CreateRepo("fleet")
	g.Expect(err).NotTo(HaveOccurred())
	mainHead, err := repo.Commit("main", "start", testgit.Files{"README.md": "fleet\n"})
	g.Expect(err).NotTo(HaveOccurred())

	o := options(repo.URL())
	o.Branch = "staging"
	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	staging, err := repo.Head("staging")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(staging).To(Equal(c.Hash))
	g.Expect(read(t, repo.URL(), "staging", "README.md")).To(Equal("fleet\n"), "the branch starts at main's head")
	got, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(mainHead), "main is left alone")
}

func TestPushFailsOnWrongCredentialsAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	srv := gitServer(t)
	repo, err := srv.CreateRepo("fleet")
	g.Expect(err).NotTo(HaveOccurred())
	o := options(repo.URL())
	o.Auth.Password = "wrong"
	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Push(context.Background(), o, files, io.Discard)
	g.Expect(err).To(MatchError(ContainSubstring("authentication")))
	g.Expect(srv.Pushes("fleet")).To(Equal(0))
}

func TestOptionsThatCannotBeHonouredAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"plain http":    {func(o *Options) { o.Auth.AllowInsecureHTTP = false }, "plain HTTP"},
		"no branch":     {func(o *Options) { o.Branch = "" }, "--branch"},
		"path outside":  {func(o *Options) { o.Path = "../elsewhere" }, "leaves the repository"},
		"ssh, no key":   {func(o *Options) { o.URL = "ssh://git@example.com/fleet.git" }, "needs --private-key-file"},
		"key for http":  {func(o *Options) { o.Auth.PrivateKey = []byte("k") }, "for ssh:// URLs"},
		"git://":        {func(o *Options) { o.URL = "git://example.com/fleet.git" }, "takes https://, http:// or ssh://"},
		"token and pwd": {func(o *Options) { o.Auth.BearerToken = "t" }, "exclusive"},
	} {
		t.Run(name, func(t *testing.T) {
			o := options("http://127.0.0.1:1/fleet.git")
			c.mutate(&o)
			_, err := Files(o)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(c.want)))
		})
	}
}

func TestTheGitSecretHoldsTheKeysSourceControllerReads(t *testing.T) {
	g := NewWithT(t)
	o := options("https://git.example.com/fleet.git")
	o.Auth.CA = []byte("-----BEGIN CERTIFICATE-----\n")
	s := GitSecret(o)
	g.Expect(s.Namespace).To(Equal(install.Namespace))
	g.Expect(s.Data).To(Equal(map[string][]byte{
		"username": []byte("git"), "password": []byte("s3cret"), "ca.crt": o.Auth.CA,
	}))
	o.Auth = Auth{}
	g.Expect(GitSecret(o)).To(BeNil())
	g.Expect(SyncObjects(o)[0].Object["spec"]).NotTo(HaveKey("secretRef"))
}

// Over SSH the push authenticates with the private key, and the host key
// it meets is what the GitRepository's Secret trusts: scanned when none is
// given, checked when one is pinned.
func TestPushOverSSHTrustsTheHostKeyItMetOrThePinnedOne(t *testing.T) {
	g := NewWithT(t)
	srv := gitServer(t)
	keyPEM, key, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	known, err := srv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{key.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())
	repo, err := srv.CreateRepo("fleet")
	g.Expect(err).NotTo(HaveOccurred())

	o := options(repo.SSHURL())
	o.Auth = Auth{PrivateKey: keyPEM}
	files, err := Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := Push(context.Background(), o, files, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Changed).To(BeTrue())
	g.Expect(string(c.KnownHosts)).To(Equal(known), "the scanned line trusts the server's host key")
	g.Expect(srv.Pushes("fleet")).To(Equal(1))
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(c.Hash))

	o.Auth.KnownHosts = c.KnownHosts
	secret := GitSecret(o)
	g.Expect(secret.Data).To(Equal(map[string][]byte{"identity": keyPEM, "known_hosts": []byte(known)}))
	g.Expect(SyncObjects(o)[0].Object["spec"]).To(HaveKeyWithValue("url", repo.SSHURL()))

	// A pinned key the host does not have: nothing is pushed.
	_, other, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	host := strings.TrimPrefix(strings.Split(repo.SSHURL(), "/")[2], "git@")
	o.Auth.KnownHosts = []byte(knownhosts.Line([]string{knownhosts.Normalize(host)}, other.PublicKey()) + "\n")
	o.Install.Version = "v0.9.1"
	files, err = Files(o)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Push(context.Background(), o, files, io.Discard)
	g.Expect(err).To(MatchError(ContainSubstring("key mismatch")))
	g.Expect(srv.Pushes("fleet")).To(Equal(1))
}
