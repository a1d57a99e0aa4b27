package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"plumb.dev/pkg/ociartifact"
)

// pushOptions are the flags of `plumb push artifact`, spelled as `flux
// push artifact` spells them.
type pushOptions struct {
	path, source, revision, creds string
	ignorePaths                   []string
	insecure, reproducible        bool
}

func newPushCmd(g *globals) *cobra.Command {
	push := &cobra.Command{
		Use:   "push",
		Short: "Push content to an OCI registry",
	}
	var o pushOptions
	artifactCmd := &cobra.Command{
		Use:   "artifact oci://<host>/<repository>:<tag> --path=<folder> --source=<url> --revision=<revision>",
		Short: "Pack a folder and push it as an OCI artifact an OCIRepository can pull",
		Long: "push artifact packs the folder of --path (minus .sourceignore rules and --ignore-paths)\n" +
			"into a tar.gz layer and pushes it in the format of `flux push artifact`: Flux's\n" +
			"media types, and --source and --revision as the annotations\n" +
			"org.opencontainers.image.source and org.opencontainers.image.revision.\n" +
			"Credentials are --creds <user>:<password>, else the docker config (docker login).\n" +
			"It prints the pushed reference with its digest.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), g, args[0])
		},
	}
	f := artifactCmd.Flags()
	f.StringVar(&o.path, "path", "", "The folder to pack (required).")
	f.StringVar(&o.source, "source", "", "Where the content comes from, e.g. the Git repository's URL (org.opencontainers.image.source).")
	f.StringVar(&o.revision, "revision", "", "The revision of the content, e.g. <branch>@sha1:<commit> (org.opencontainers.image.revision).")
	f.StringVar(&o.creds, "creds", "", "Registry credentials, <username>:<password>; unset reads the docker config.")
	f.StringSliceVar(&o.ignorePaths, "ignore-paths", nil, "Paths to leave out, in .gitignore syntax (replaces the default exclusions).")
	f.BoolVar(&o.insecure, "insecure-registry", false, "Use plain HTTP to the registry.")
	f.BoolVar(&o.reproducible, "reproducible", false, "Set the creation time to the Unix epoch, so the same content gives the same digest.")
	_ = artifactCmd.MarkFlagRequired("path")
	push.AddCommand(artifactCmd)
	return push
}

func (o *pushOptions) run(ctx context.Context, g *globals, url string) error {
	info, err := os.Stat(o.path)
	if err != nil {
		return fmt.Errorf("--path: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("--path %s is not a folder", o.path)
	}
	opts := ociartifact.PushOptions{
		Source: o.source, Revision: o.revision, Insecure: o.insecure,
		Keychain: authn.DefaultKeychain,
	}
	if opts.Auth, err = credsAuth(o.creds); err != nil {
		return err
	}
	if o.ignorePaths != nil {
		ignore := strings.Join(o.ignorePaths, "\n")
		opts.Ignore = &ignore
	}
	if o.reproducible {
		opts.Created = time.Unix(0, 0)
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	ref, err := ociartifact.Push(ctx, url, o.path, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.out, "✔ pushed %s\n", ref)
	return nil
}
