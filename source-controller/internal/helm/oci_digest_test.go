package helm_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// PullDigest pulls the chart of the manifest digest even after its tag
// moved to another chart (the one a signature was checked for), and a
// digest the repository does not hold is an error, not another chart.
func TestPullDigestPullsTheManifestItNames(t *testing.T) {
	reg, err := testhelm.NewRegistry(testhelm.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	first := testhelm.Chart{Name: "app", Version: "1.0.0", Files: testhelm.Files{"templates/a.yaml": "a: 1\n"}}
	ref, err := reg.Push(first)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	moved := first
	moved.Files = testhelm.Files{"templates/a.yaml": "a: moved\n"}
	if _, err := reg.Push(moved); err != nil {
		t.Fatal(err)
	}
	c, err := helm.NewRegistry(reg.Host(), helm.Credentials{}, true, 5*time.Second, 1<<20, loopback)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Host() + "/charts/app"
	want, err := testhelm.Package(first)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.PullDigest(repo, d.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("PullDigest returned another chart than the digest's")
	}
	byTag, err := c.Pull(repo, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(byTag, want) {
		t.Fatal("the tag did not move: the test proves nothing")
	}
	if _, err := c.PullDigest(repo, "sha256:"+strings.Repeat("0", 64)); err == nil {
		t.Fatal("an unknown digest was pulled")
	}
}
