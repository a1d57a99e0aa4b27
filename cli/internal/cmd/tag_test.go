package cmd

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// tag image gives an image in a real registry new tags with the same
// digest; behind basic auth it needs --creds, and an image that is not
// there is an error that names it.
func TestTagImageAddsTagsWithTheSameDigest(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // never the user's credentials
	host := startRegistry(t, "robot", "s3cret")
	auth := remote.WithAuth(&authn.Basic{Username: "robot", Password: "s3cret"})
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	src, err := name.NewTag(host + "/examples/web:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(src, img, auth); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"tag", "image", src.String(), "--tag=1.0.1,1.0", "--insecure-registry"}

	if r := plumb(args...); r.code != ExitError || !strings.Contains(r.errOut, "UNAUTHORIZED") && !strings.Contains(r.errOut, "401") {
		t.Fatalf("a tag without credentials must be refused:\n%s", r)
	}
	r := plumb(append(args, "--creds=robot:s3cret")...)
	if r.code != ExitOK {
		t.Fatalf("tag: %s", r)
	}
	for _, tag := range []string{"1.0.1", "1.0"} {
		if !strings.Contains(r.out, host+"/examples/web:"+tag+"@"+digest.String()) {
			t.Errorf("the output does not name %s with the digest: %s", tag, r)
		}
		ref, err := name.NewTag(host + "/examples/web:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref, auth)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if desc.Digest != digest {
			t.Errorf("%s has digest %s, want %s", ref, desc.Digest, digest)
		}
	}

	r = plumb("tag", "image", host+"/examples/web:9.9.9", "--tag=10.0.0", "--insecure-registry", "--creds=robot:s3cret")
	if r.code != ExitError || !strings.Contains(r.errOut, "examples/web:9.9.9") {
		t.Fatalf("tagging a missing image must fail naming it:\n%s", r)
	}
	tags, err := remote.List(src.Context(), auth)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(tags, ","), "10.0.0") {
		t.Errorf("a failed tag left %v", tags)
	}
}
