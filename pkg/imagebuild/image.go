package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI labels every image carries.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelCreated  = "org.opencontainers.image.created"
)

// Options is what every image of one build shares.
type Options struct {
	// Dir is where `go build` runs: the repository root, where go.work is.
	Dir string
	// WorkDir holds the binaries while the images are written; the caller
	// removes it.
	WorkDir string
	// Version and Commit go into the binaries (plumb.dev/pkg/version) and
	// the labels; Version is also the tag Push gives.
	Version string
	Commit  string
	// Source is the repository's URL, for the label.
	Source string
	// Created is every time in the images: the config's, the history's and
	// each file's mtime. The commit's time, so a rebuild of the commit
	// gives the same digests.
	Created time.Time
	// Platforms to build; at least one.
	Platforms []v1.Platform
	// VersionPackage is the package whose string variables Version and
	// Commit the linker sets; default plumb.dev/pkg/version. The example
	// app's programs (deploy/examples/images) say "main": they import
	// nothing of Plumb, so the deploy module needs no requirement.
	VersionPackage string
}

func (o Options) validate() error {
	switch {
	case o.Dir == "" || o.WorkDir == "":
		return errors.New("imagebuild: Dir and WorkDir are required")
	case o.Version == "":
		return errors.New("imagebuild: Version is required")
	case o.Created.IsZero():
		return errors.New("imagebuild: Created is required (the commit's time)")
	case len(o.Platforms) == 0:
		return errors.New("imagebuild: no platform")
	}
	return nil
}

// Build compiles the program pkg (a package path relative to o.Dir, its
// last element the program's name) for each platform and returns the
// multi-platform OCI image index.
func Build(ctx context.Context, o Options, pkg string) (v1.ImageIndex, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	base, err := layer(baseEntries(), o.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		img, err := buildImage(ctx, o, pkg, p, base)
		if err != nil {
			return nil, err
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

func buildImage(ctx context.Context, o Options, pkg string, p v1.Platform, base v1.Layer) (v1.Image, error) {
	name := binaryName(pkg)
	bin := filepath.Join(o.WorkDir, p.OS+"-"+p.Architecture, name)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return nil, err
	}
	versionPkg := o.VersionPackage
	if versionPkg == "" {
		versionPkg = versionPackage
	}
	if err := goBuild(ctx, o.Dir, pkg, p, versionPkg, o.Version, o.Commit, bin); err != nil {
		return nil, err
	}
	app, err := layer([]entry{hostFile(name, 0o755, bin)}, o.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "plumb imagebuild: passwd, group, nsswitch.conf, CA certificates"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "go build -trimpath " + pkg}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Config.User = User
	cf.Config.Entrypoint = []string{"/" + name}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = map[string]string{
		LabelTitle:   name,
		LabelVersion: o.Version,
		LabelCreated: o.Created.UTC().Format(time.RFC3339),
	}
	// An empty label says nothing; a build outside Git has no commit.
	if o.Commit != "" {
		cf.Config.Labels[LabelRevision] = o.Commit
	}
	if o.Source != "" {
		cf.Config.Labels[LabelSource] = o.Source
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("%s for %s: %w", name, platformString(p), err)
	}
	return img, nil
}
