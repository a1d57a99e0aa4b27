package localenv

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A repository with push credentials refuses a push without them or with
// a wrong password (nothing lands), takes one with them and records who
// pushed; fetches stay anonymous.
func TestGitServerPushesNeedTheRepositorysCredentials(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := newGitServer(t.TempDir(), io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	g.Expect(srv.CreateRepo(ctx, "app")).To(Succeed())
	srv.SetPushCredentials("app", PushCredentials{Username: "bot", Password: "s3cret"})
	g.Expect(srv.PushURL("app")).To(Equal("http://bot:s3cret@" + srv.ln.Addr().String() + "/app.git"))

	for _, url := range []string{srv.URL("app"), "http://bot:wrong@" + srv.ln.Addr().String() + "/app.git"} {
		work, err := InitClone(ctx, url, filepath.Join(t.TempDir(), "app"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(work.Write(map[string]string{"cm.yaml": "kind: ConfigMap\n"})).To(Succeed())
		_, err = work.CommitAndPush(ctx, "refused")
		g.Expect(err).To(HaveOccurred(), "a push to %s", url)
	}
	refs, err := listRefs(ctx, filepath.Join(srv.root, "app.git"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(BeEmpty(), "a refused push left refs")
	g.Expect(srv.Pushers("app")).To(BeEmpty())

	work, err := InitClone(ctx, srv.PushURL("app"), filepath.Join(t.TempDir(), "app"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Write(map[string]string{"cm.yaml": "kind: ConfigMap\n"})).To(Succeed())
	_, err = work.CommitAndPush(ctx, "first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.Pushers("app")).To(Equal([]string{"bot"}))

	clone, err := CloneRepo(ctx, srv.URL("app"), filepath.Join(t.TempDir(), "clone"))
	g.Expect(err).NotTo(HaveOccurred(), "an anonymous fetch")
	got, err := clone.Read("cm.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("kind: ConfigMap\n"))
}
