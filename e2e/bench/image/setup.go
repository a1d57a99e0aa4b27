package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/imagebuild"
)

// setUp deploys the sample with its image automation as `make run` does,
// waits until it is Ready and clones its repository for the floor.
func (b *bench) setUp(ctx context.Context) error {
	var err error
	if b.wc, err = client.NewWithWatch(b.env.Config, client.Options{Scheme: b.env.Scheme}); err != nil {
		return err
	}
	say(">> deploying the sample with its image automation")
	if b.demo, err = b.env.DeployDemo(ctx, localenv.DemoOptions{ImageAutomation: true}); err != nil {
		return err
	}
	if err := b.env.WaitDemoReady(ctx, b.demo); err != nil {
		return err
	}
	work, err := os.MkdirTemp(b.env.StateDir, "bench-")
	if err != nil {
		return err
	}
	b.clone, err = localenv.CloneRepo(ctx, b.demo.PushURL, filepath.Join(work, "demo"))
	return err
}

// tagImage writes the manifest of the sample's web image under a new tag,
// as `plumb tag image` (CI) does, and returns the tag.
func (b *bench) tagImage(ctx context.Context) (string, error) {
	tag := fmt.Sprintf("1.0.%d", b.next)
	b.next++
	src, err := name.NewTag(b.demo.WebImage+":"+imagebuild.ExampleVersion, name.Insecure)
	if err != nil {
		return tag, err
	}
	dst, err := name.NewTag(b.demo.WebImage+":"+tag, name.Insecure)
	if err != nil {
		return tag, err
	}
	desc, err := remote.Get(src, remote.WithContext(ctx))
	if err != nil {
		return tag, err
	}
	return tag, remote.Tag(dst, desc, remote.WithContext(ctx))
}
