package imagebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// LocalOptions say what PushLocal builds and where it pushes it.
type LocalOptions struct {
	// Root is the repository's top, where go.work is.
	Root string
	// Registry is a host and port with an optional path, as
	// IMAGE_REGISTRY: each program goes to <Registry>/<Name>:<version>.
	// Plain HTTP is allowed to a loopback address only.
	Registry string
	// Programs to build: PlumbPrograms, ExamplePrograms or both.
	Programs []Program
	// Version and Commit are linked into the binaries and labelled;
	// Version is the tag (a Program's own Version wins). Default "dev" and
	// none, as a `go build` of the programs says, so the images of one
	// source tree stay cached across commits that do not change it.
	Version, Commit string
	// Created is every time in the images; default the Unix epoch, as ko
	// does without SOURCE_DATE_EPOCH.
	Created time.Time
	// Source is the label org.opencontainers.image.source; default none.
	Source string
	// CacheDir holds the images built, one OCI layout per program and
	// cache key; default <user cache dir>/plumb/images
	// (~/.cache/plumb/images).
	CacheDir string
	// Logf, when set, hears of each image.
	Logf func(format string, args ...any)
}

// Pushed is one image PushLocal pushed.
type Pushed struct {
	Program Program
	// Ref is where it went: <Registry>/<Name>:<tag>.
	Ref name.Tag
	// Digest is its image index's; the same for the same inputs.
	Digest v1.Hash
	// Cached says it came from CacheDir, not from a build.
	Cached bool
	Took   time.Duration
}

// keepPerProgram is how many cached builds of a program stay on disk:
// enough to go back and forth between two branches.
const keepPerProgram = 3

// PushLocal builds each program for the host's platform only (a local
// node runs nothing else) and pushes it to o.Registry. A build is kept in
// o.CacheDir under a key of everything that goes into it: the program,
// the content of its Sources and of the workspace's module files and this
// builder (as Git sees the working tree, uncommitted changes included),
// the Go toolchain's version, the platform, the version, commit, creation
// time and source label. The same inputs make the same digests, so a
// cached image is the one a build would make; a second start only pushes.
// Every image built is checked (Check: user, entrypoint, no shell, the
// binary started with --help) before it is cached. Outside a Git checkout
// nothing is cached.
func PushLocal(ctx context.Context, o LocalOptions) ([]Pushed, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	platform, err := ParsePlatform("linux/" + runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	goVer, err := goVersion(ctx, o.Root)
	if err != nil {
		return nil, err
	}
	common, err := workspaceModFiles(o.Root)
	if err != nil {
		return nil, err
	}
	common = append(common, builderSources...)

	var pushed []Pushed
	for _, p := range o.Programs {
		start := time.Now()
		version := o.Version
		if p.Version != "" {
			version = p.Version
		}
		ref, err := Reference(strings.TrimSuffix(o.Registry, "/"), p.Name, version)
		if err != nil {
			return nil, err
		}
		src, err := sourcesDigest(ctx, o.Root, append(append([]string(nil), common...), p.Sources...))
		if err != nil {
			o.Logf("%s: not cached, the sources have no Git state to key on: %v", p.Name, err)
			src = ""
		}
		bo := Options{
			Dir: o.Root, Version: version, Commit: o.Commit, Source: o.Source, Created: o.Created,
			Platforms: []v1.Platform{platform}, VersionPackage: p.VersionPackage,
		}
		idx, cached, err := o.image(ctx, p, bo, cacheKey(p, bo, goVer, src))
		if err != nil {
			return nil, err
		}
		if err := Push(ctx, ref, idx); err != nil {
			return nil, err
		}
		digest, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		r := Pushed{Program: p, Ref: ref, Digest: digest, Cached: cached, Took: time.Since(start)}
		how := "built"
		if cached {
			how = "cached"
		}
		o.Logf("%s@%s (%s, %s)", ref, digest, how, r.Took.Round(10*time.Millisecond))
		pushed = append(pushed, r)
	}
	return pushed, nil
}

func (o *LocalOptions) defaults() error {
	if o.Root == "" || o.Registry == "" {
		return errors.New("imagebuild: Root and Registry are required")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	if o.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("imagebuild: no cache folder (set LocalOptions.CacheDir): %w", err)
		}
		o.CacheDir = filepath.Join(dir, "plumb", "images")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

// cacheKey names one build; "" when the sources could not be hashed.
func cacheKey(p Program, o Options, goVer, sources string) string {
	if sources == "" {
		return ""
	}
	h := sha256.New()
	// The first line changes when the cache's layout or what Build makes
	// of the same inputs does, outside the sources hashed.
	fmt.Fprintf(h, "plumb imagebuild cache 1\n")
	fmt.Fprintf(h, "go %s\nplatforms %v\n", goVer, o.Platforms)
	fmt.Fprintf(h, "program %q %q %q\n", p.Name, p.Package, o.VersionPackage)
	fmt.Fprintf(h, "version %q commit %q source %q created %d\n", o.Version, o.Commit, o.Source, o.Created.Unix())
	fmt.Fprintf(h, "sources %s\n", sources)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// image returns the program's index from the cache, or builds, checks and
// caches it. A cache entry that cannot be read is built again.
func (o *LocalOptions) image(ctx context.Context, p Program, bo Options, key string) (v1.ImageIndex, bool, error) {
	dir := filepath.Join(o.CacheDir, filepath.FromSlash(p.Name))
	entry := filepath.Join(dir, key)
	if key != "" {
		if idx, err := ReadLayout(entry); err == nil {
			if err := verifyLayout(entry, idx); err == nil {
				now := time.Now()
				_ = os.Chtimes(entry, now, now) // most recently used, for prune
				return idx, true, nil
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	work, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(work)
	bo.WorkDir = filepath.Join(work, "work")
	idx, err := Build(ctx, bo, p.Package)
	if err != nil {
		return nil, false, err
	}
	if err := Check(ctx, idx, p.Binary(), filepath.Join(bo.WorkDir, "check")); err != nil {
		return nil, false, err
	}
	if key == "" {
		return idx, false, nil
	}
	// Written aside and renamed into place, so a reader never meets half
	// a layout; if another process cached the same key meanwhile, its
	// copy (the same bytes) stays.
	tmp := filepath.Join(work, "layout")
	if err := WriteLayout(tmp, idx, bo.Version); err != nil {
		return nil, false, err
	}
	_ = os.RemoveAll(entry)
	if err := os.Rename(tmp, entry); err != nil && !os.IsExist(err) {
		return nil, false, err
	}
	prune(dir, keepPerProgram)
	back, err := ReadLayout(entry)
	if err != nil {
		return nil, false, err
	}
	return back, false, nil
}

// verifyLayout checks that every blob the index names is in the layout
// at dir with its size: a file removed or cut short (a full disk, a
// killed copy) fails here rather than in the push. The registry checks
// the digests of what it receives.
func verifyLayout(dir string, idx v1.ImageIndex) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var blobs []v1.Descriptor
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		im, err := img.Manifest()
		if err != nil {
			return err
		}
		blobs = append(append(blobs, d, im.Config), im.Layers...)
	}
	for _, d := range blobs {
		fi, err := os.Stat(filepath.Join(dir, "blobs", d.Digest.Algorithm, d.Digest.Hex))
		if err != nil {
			return err
		}
		if fi.Size() != d.Size {
			return fmt.Errorf("blob %s: %d bytes, want %d", d.Digest, fi.Size(), d.Size)
		}
	}
	return nil
}

// prune removes all but the keep most recently used entries of dir, and
// work folders a day old.
func prune(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type used struct {
		path string
		at   time.Time
	}
	var all []used
	for _, e := range entries {
		fi, err := e.Info()
		if !e.IsDir() || err != nil {
			continue
		}
		// A build's work folder, left by a process that was killed.
		if strings.HasPrefix(e.Name(), ".") {
			if time.Since(fi.ModTime()) > 24*time.Hour {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
			continue
		}
		all = append(all, used{filepath.Join(dir, e.Name()), fi.ModTime()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.After(all[j].at) })
	for i := keep; i < len(all); i++ {
		_ = os.RemoveAll(all[i].path)
	}
}
