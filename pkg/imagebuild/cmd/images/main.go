// Command images builds the images of Plumb's programs with
// plumb.dev/pkg/imagebuild and pushes them to a registry, or writes them as
// OCI image layouts, then reads each one back and checks it (imagebuild.Check:
// user, entrypoint, no shell, and the binary for this machine's platform
// started with --help). `make images` runs it:
//
//	go run ./pkg/imagebuild/cmd/images -version v0.4.0 -commit <sha> -created <unix seconds> \
//	    [-registry ghcr.io/plumb-dev | -out bin/images] [-platforms linux/amd64,linux/arm64] <program>...
//
// A program is the folder of its main package under -dir (source-controller,
// …, ui), or examples/web and examples/hook, the example app's images
// (deploy/examples/images, imagebuild.ExamplePrograms), which carry the
// sample's own version (imagebuild.ExampleVersion) in place of -version,
// or plumb-plugin-envsubst, the example config-management plugin
// (imagebuild.PluginPrograms) that deploy/components/plugins runs;
// its image is <registry>/<program>:<version>, or the layout
// <out>/<program>. It prints one line per image: program, where it went,
// digest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plumb.dev/pkg/imagebuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		o         imagebuild.Options
		registry  = flag.String("registry", "", "push to <registry>/<program>:<version> (a host and optional path); plain HTTP only to 127.0.0.1 or localhost. Empty: write OCI layouts under -out")
		out       = flag.String("out", "bin/images", "where the OCI layouts go when no -registry is set, one folder per program")
		created   = flag.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the images' time in Unix seconds: the commit's (git log -1 --format=%ct); default $SOURCE_DATE_EPOCH")
		platforms = flag.String("platforms", "linux/amd64,linux/arm64", "the platforms of each image index")
	)
	flag.StringVar(&o.Dir, "dir", ".", "the repository root, where go.work is")
	flag.StringVar(&o.Version, "version", "", "the version: linked into the binaries, the label org.opencontainers.image.version and the tag")
	flag.StringVar(&o.Commit, "commit", "", "the commit: linked into the binaries and the label org.opencontainers.image.revision")
	flag.StringVar(&o.Source, "source", "", "the repository's URL, for the label org.opencontainers.image.source")
	flag.Parse()

	programs := flag.Args()
	if len(programs) == 0 {
		return errors.New("name the programs to build (source-controller, render-controller, sync-controller, notification-controller, image-controller, ui, plumb-plugin-envsubst)")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: want the commit's time in Unix seconds (or set SOURCE_DATE_EPOCH)", *created)
	}
	o.Created = time.Unix(secs, 0).UTC()
	for _, s := range strings.Split(*platforms, ",") {
		p, err := imagebuild.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		o.Platforms = append(o.Platforms, p)
	}
	if o.WorkDir, err = os.MkdirTemp("", "plumb-images-"); err != nil {
		return err
	}
	defer os.RemoveAll(o.WorkDir)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, program := range programs {
		if err := image(ctx, o, program, *registry, *out); err != nil {
			return err
		}
	}
	return nil
}

// programFor is the example program of that name, or the main package
// in the folder of that name.
func programFor(name string) imagebuild.Program {
	for _, p := range append(slices.Clone(imagebuild.ExamplePrograms), imagebuild.PluginPrograms...) {
		if p.Name == name {
			return p
		}
	}
	return imagebuild.Program{Name: name, Package: "./" + name}
}

// image builds, publishes and checks one program's image.
func image(ctx context.Context, o imagebuild.Options, name, registry, out string) error {
	start := time.Now()
	p := programFor(name)
	program := p.Name
	o.VersionPackage = p.VersionPackage
	if p.Version != "" {
		o.Version = p.Version
	}
	idx, err := imagebuild.Build(ctx, o, p.Package)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	var where string
	var back v1.ImageIndex
	if registry != "" {
		ref, err := imagebuild.Reference(strings.TrimSuffix(registry, "/"), program, o.Version)
		if err != nil {
			return err
		}
		if err := imagebuild.Push(ctx, ref, idx); err != nil {
			return err
		}
		if back, err = imagebuild.Pull(ctx, ref); err != nil {
			return err
		}
		where = ref.String()
	} else {
		where = filepath.Join(out, program)
		if err := imagebuild.WriteLayout(where, idx, o.Version); err != nil {
			return err
		}
		if back, err = imagebuild.ReadLayout(where); err != nil {
			return err
		}
	}
	if got, err := back.Digest(); err != nil || got != digest {
		return fmt.Errorf("%s: read back %v (%v), wrote %s", where, got, err, digest)
	}
	if err := imagebuild.Check(ctx, back, p.Binary(), filepath.Join(o.WorkDir, "check", program)); err != nil {
		return err
	}
	fmt.Printf("%-24s %s@%s (%s)\n", program, where, digest, time.Since(start).Round(time.Second))
	return nil
}
