package ociartifact

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"plumb.dev/pkg/artifact"
)

// Media types and annotations of Flux's artifact format.
const (
	ConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	ContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"

	SourceAnnotation   = "org.opencontainers.image.source"
	RevisionAnnotation = "org.opencontainers.image.revision"
	CreatedAnnotation  = "org.opencontainers.image.created"
)

// PushOptions say what to record and how to reach the registry.
type PushOptions struct {
	// Source and Revision go into the annotations of the same names.
	Source, Revision string
	// Created is the creation time annotation; zero is now.
	Created time.Time
	// Ignore excludes paths from the packed folder (gitignore syntax, with
	// the folder's .sourceignore files), nil for pkg/artifact's defaults.
	Ignore *string
	// Insecure uses plain HTTP.
	Insecure bool
	// Auth is the registry's credentials; nil is anonymous.
	Auth authn.Authenticator
	// Keychain resolves credentials when Auth is nil (e.g.
	// authn.DefaultKeychain: the user's docker config); nil is anonymous.
	Keychain authn.Keychain
}

// Push packs dir and pushes it to url (oci://host/repo:tag) and returns
// the pushed reference with its digest, host/repo@sha256:<hex>.
func Push(ctx context.Context, url, dir string, opts PushOptions) (string, error) {
	s, ok := strings.CutPrefix(url, "oci://")
	if !ok {
		return "", fmt.Errorf("%q does not start with oci://", url)
	}
	var nameOpts []name.Option
	if opts.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.NewTag(s, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return "", fmt.Errorf("%q is not oci://<host>/<repository>:<tag>: %w", url, err)
	}
	var layer bytes.Buffer
	if err := artifact.Pack(ctx, &layer, dir, artifact.PackOptions{Ignore: artifact.NewIgnorer(opts.Ignore)}); err != nil {
		return "", fmt.Errorf("packing %s: %w", dir, err)
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	annotations := map[string]string{CreatedAnnotation: created.UTC().Format(time.RFC3339)}
	if opts.Source != "" {
		annotations[SourceAnnotation] = opts.Source
	}
	if opts.Revision != "" {
		annotations[RevisionAnnotation] = opts.Revision
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(layer.Bytes(), ContentMediaType)})
	if err != nil {
		return "", err
	}
	img = mutate.Annotations(img, annotations).(v1.Image)
	ropts := []remote.Option{remote.WithContext(ctx)}
	switch {
	case opts.Auth != nil:
		ropts = append(ropts, remote.WithAuth(opts.Auth))
	case opts.Keychain != nil:
		ropts = append(ropts, remote.WithAuthFromKeychain(opts.Keychain))
	}
	if err := remote.Write(ref, img, ropts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(d.String()).String(), nil
}
