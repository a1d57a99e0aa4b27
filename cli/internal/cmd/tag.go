package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
)

// tagOptions are the flags of `plumb tag image`, spelled as `flux tag
// artifact` spells them.
type tagOptions struct {
	tags     []string
	creds    string
	insecure bool
}

// newTagCmd is `plumb tag image`: what CI does when it releases an image
// it built before (a tested build promoted to a version), and what makes
// an ImageRepository see a new tag. Only the manifest is written: the
// registry has the blobs already, so a tag costs one small request.
func newTagCmd(g *globals) *cobra.Command {
	tag := &cobra.Command{
		Use:   "tag",
		Short: "Tag an image in its registry",
	}
	var o tagOptions
	imageCmd := &cobra.Command{
		Use:   "image <host>/<repository>:<tag>|@<digest> --tag=<new tag>",
		Short: "Give an image in a registry one or more new tags",
		Long: "tag image reads the manifest of the image (a tag or a digest) and writes it again\n" +
			"under each --tag in the same repository, as `flux tag artifact` does: the\n" +
			"digest stays, no layer moves. Credentials are --creds <user>:<password>, else\n" +
			"the docker config (docker login). It prints each new reference with its digest.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), g, args[0])
		},
	}
	f := imageCmd.Flags()
	f.StringSliceVar(&o.tags, "tag", nil, "The new tag (repeat it, or separate with commas, for several).")
	f.StringVar(&o.creds, "creds", "", "Registry credentials, <username>:<password>; unset reads the docker config.")
	f.BoolVar(&o.insecure, "insecure-registry", false, "Use plain HTTP to the registry.")
	_ = imageCmd.MarkFlagRequired("tag")
	tag.AddCommand(imageCmd)
	return tag
}

func (o *tagOptions) run(ctx context.Context, g *globals, image string) error {
	var nameOpts []name.Option
	if o.insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	// An oci:// prefix, as push artifact takes, is accepted too.
	ref, err := name.ParseReference(strings.TrimPrefix(image, "oci://"), nameOpts...)
	if err != nil {
		return fmt.Errorf("%s: %w", image, err)
	}
	newTags := make([]name.Tag, 0, len(o.tags))
	for _, t := range o.tags {
		nt, err := name.NewTag(ref.Context().String()+":"+t, nameOpts...)
		if err != nil {
			return fmt.Errorf("--tag %q: %w", t, err)
		}
		newTags = append(newTags, nt)
	}
	if len(newTags) == 0 {
		return fmt.Errorf("--tag is required")
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx)}
	auth, err := credsAuth(o.creds)
	if err != nil {
		return err
	}
	if auth != nil {
		opts = append(opts, remote.WithAuth(auth))
	} else {
		opts = append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	for _, nt := range newTags {
		if err := remote.Tag(nt, desc, opts...); err != nil {
			return fmt.Errorf("tagging %s: %w", nt, err)
		}
		fmt.Fprintf(g.out, "✔ tagged %s@%s\n", nt, desc.Digest)
	}
	return nil
}

// credsAuth reads --creds, <username>:<password>; nil when unset, for the
// docker config to be read instead.
func credsAuth(creds string) (authn.Authenticator, error) {
	if creds == "" {
		return nil, nil
	}
	user, pass, ok := strings.Cut(creds, ":")
	if !ok {
		return nil, fmt.Errorf("--creds must be <username>:<password>")
	}
	return &authn.Basic{Username: user, Password: pass}, nil
}
